"""EMULATOR_FAULTS: a broker's fault rules over the wire (``rocketmq-emulator fault``,
RemoteBroker.faults). Header ``action``: add (the rule as a JSON body: operation,
action and the optional fields of broker/faults.rule_from; ``window`` as two durations
from now on the broker's clock, ``delay`` a duration), list, remove (header ``id``),
clear. The reply's body is JSON. In a cluster every broker that is up gets the rule as one
object (broker/faults.place_rule: one id, one count, its ``broker`` matcher decides where
it fires); a listed rule names the brokers it is on."""
from __future__ import annotations

import json

from .....delay_scheduler.levels import parse_duration
from ....cluster import live_members
from ....faults import FaultError, list_rules, place_rule, rule_from
from ..protocol import RequestRefused, ResponseCode as RC

__all__ = ["fault_rules_request"]

_FIELDS = {"topic", "group", "client", "dialect", "broker", "times", "probability", "window", "delay", "error",
           "stored"}


def _duration(value, field: str) -> int:
    if isinstance(value, bool):
        raise FaultError(f"{field}: a duration, got {value!r}")
    if isinstance(value, int):
        return value
    try:
        return parse_duration(str(value))
    except ValueError as exc:
        raise FaultError(f"{field}: {exc}") from None


def _rule(doc, now_ms: int, brokers: list[str]):
    if not isinstance(doc, dict):
        raise FaultError("a rule is a JSON object")
    unknown = sorted(set(doc) - _FIELDS - {"operation", "action"})
    if unknown:
        raise FaultError(f"{unknown[0]}: not a field of a fault rule")
    if doc.get("broker") is not None and doc["broker"] not in brokers:
        raise FaultError(f"broker: no broker named {doc['broker']!r} (there are {', '.join(brokers)})")
    window = doc.get("window")
    if window is not None:
        if not isinstance(window, list) or len(window) != 2:
            raise FaultError(f"window: two durations from now (start, end), got {window!r}")
        window = (now_ms + _duration(window[0], "window"), now_ms + _duration(window[1], "window"))
    return dict(operation=doc.get("operation"), action=doc.get("action"), topic=doc.get("topic"),
                group=doc.get("group"), client=doc.get("client"), dialect=doc.get("dialect"),
                broker=doc.get("broker"), times=doc.get("times"), probability=doc.get("probability"),
                window_ms=window, delay_ms=_duration(doc.get("delay", 0), "delay"), error=doc.get("error"),
                stored=bool(doc.get("stored", False)))


def fault_rules_request(front, request, channel):
    cores = live_members(front.core)
    action = request.header("action")
    try:
        if action == "add":
            try:
                doc = json.loads(request.body or b"null")
            except ValueError as exc:
                raise FaultError(f"the rule is not JSON ({exc})") from None
            fields = _rule(doc, front.core.clock.now_ms(), [c.config.broker_name for c in cores])
            rule = place_rule([c.faults for c in cores], rule_from(**fields))
            body = dict(rule.to_json(), brokers=[c.config.broker_name for c in cores])
        elif action == "list":
            body = list_rules([c.faults for c in cores])
        elif action == "remove":
            rule_id = request.header_int("id")
            body = {"removed": any([c.faults.remove(rule_id) for c in cores])}
        elif action == "clear":
            body = {"cleared": max((c.faults.clear() for c in cores), default=0)}
        else:
            raise RequestRefused(f"unknown fault action {action!r} (add, list, remove or clear)")
    except FaultError as exc:
        raise RequestRefused(str(exc)) from None
    return request.response(RC.SUCCESS, body=json.dumps(body).encode())
