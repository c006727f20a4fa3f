"""Fault rules on every broker of a cluster, from a JSON document (issue 38): what the
wire request of `rocketmq-emulator fault` (EMULATOR_FAULTS) and the HTTP API
(``/api/faults``) both do, written once.

A rule document has the fields of broker/faults/rules.rule_from: ``operation`` and ``action``,
then any of ``topic``, ``group``, ``client``, ``dialect``, ``broker``, ``times``,
``probability``, ``window`` (two durations from now on the broker's clock: ms or a text
such as "10s"), ``delay`` (ms or a duration text), ``error``, ``stored``. Every member of
the cluster gets the rule, up or stopped (a stopped broker's fires once it is back), as
one object (broker/faults/rules.place_rule): one id, "times" counted across the cluster, one
hit count. The ``broker`` matcher decides where a rule fires. Bad input is a FaultError
whose message names the field.

Also here: what an applied fault's event (EventKind.FAULT, told by FaultSet.match)
names — its rule, action and operation — for the dashboard's live feed and /metrics.
"""
from __future__ import annotations


from rocketmq_emulator.delay_scheduler.levels import parse_duration

from ..cluster import Cluster
from .rules import DOCUMENT_FIELDS, DOCUMENT_NAMES, FaultError, list_rules, place_rule, rule_from

__all__ = ["RULE_FIELDS", "members", "rule_fields", "place", "add_everywhere", "listed", "remove_everywhere",
           "clear_everywhere"]

RULE_FIELDS = DOCUMENT_FIELDS          # (rules.RULE_FIELDS, by their names in a document)
_KEYWORD = {document: name for name, document in DOCUMENT_NAMES.items()}


def members(core) -> list:
    """Every broker of ``core``'s cluster, up or stopped (``core`` alone when it has none)."""
    names = core.names
    return [names.core(n) for n in names.names] if isinstance(names, Cluster) else [core]


def _duration(value, field: str) -> int:
    if isinstance(value, bool) or value is None:
        raise FaultError(f"{field}: a duration (ms or a text such as \"5s\"), got {value!r}")
    if isinstance(value, int):
        return value
    try:
        return parse_duration(str(value))
    except ValueError as exc:
        raise FaultError(f"{field}: {exc}") from None


def _number(value, kind: type, field: str):
    """A number given as JSON or as a text of one ("3", "0.5"): what the command line gives."""
    if isinstance(value, str):
        try:
            return kind(value.strip())
        except ValueError:
            raise FaultError(f"{field}: a number, got {value!r}") from None
    return value


def rule_fields(doc, now_ms: int, brokers: list[str]) -> dict:
    """The keyword arguments of rule_from for a rule document (FaultError naming the field)."""
    if not isinstance(doc, dict):
        raise FaultError("a rule is a JSON object: {\"operation\": \"send\", \"action\": \"refuse\", ...}")
    unknown = sorted(set(doc) - set(RULE_FIELDS))
    if unknown:
        raise FaultError(f"{unknown[0]}: not a field of a fault rule (the fields: {', '.join(RULE_FIELDS)})")
    for needed in ("operation", "action"):
        if doc.get(needed) is None:
            raise FaultError(f"{needed}: needed")
    if doc.get("broker") is not None and doc["broker"] not in brokers:
        raise FaultError(f"broker: no broker named {doc['broker']!r} (there are {', '.join(brokers)})")
    window = doc.get("window")
    if window is not None:
        if not isinstance(window, (list, tuple)) or len(window) != 2:
            raise FaultError(f"window: two durations from now (start, end), got {window!r}")
        window = (now_ms + _duration(window[0], "window"), now_ms + _duration(window[1], "window"))
    stored = doc.get("stored", False)
    if stored not in (True, False, None, "true", "false"):
        raise FaultError(f"stored: true or false, got {stored!r}")
    delay = doc.get("delay")
    fields = {_KEYWORD.get(name, name): doc[name] for name in RULE_FIELDS if doc.get(name) is not None}
    fields.update(times=_number(doc.get("times"), int, "times"),
                  probability=_number(doc.get("probability"), float, "probability"), window_ms=window,
                  delay_ms=0 if delay is None else _duration(delay, "delay"), stored=stored in (True, "true"))
    return fields


def place(cores: list, rule):
    """Install ``rule`` (from rules.rule_from) on each of ``cores`` as one object
    (rules.place_rule): one id, "times" counted across them, one hit count; the rule."""
    return place_rule([c.faults for c in cores], rule)


def add_everywhere(cores: list, doc) -> dict:
    """Install the rule ``doc`` on each of ``cores`` (a cluster's members): the rule as
    JSON, with ``brokers``, the names of those that got it. Nothing is installed when
    the rule is bad."""
    names = [c.config.broker_name for c in cores]
    fields = rule_fields(doc, cores[0].clock.now_ms(), names)
    rule = place(cores, rule_from(**fields))
    return dict(rule.to_json(), brokers=names)


def listed(cores: list) -> list[dict]:
    """Every rule once with its counts (the cluster's: one rule object on every broker)
    and ``brokers``, the names of the brokers it is on."""
    return list_rules([c.faults for c in cores])


def remove_everywhere(cores: list, rule_id: int) -> bool:
    """Remove a rule from every broker; whether any still had it (one already gone is
    not an error)."""
    return any([c.faults.remove(rule_id) for c in cores])


def clear_everywhere(cores: list) -> int:
    """Remove every rule of every broker; how many rules there were (a rule on every
    broker counts once)."""
    return max((c.faults.clear() for c in cores), default=0)

