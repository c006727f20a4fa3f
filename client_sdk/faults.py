"""Faults on demand from a test (issue 38): ``broker.faults`` of an EmbeddedBroker.

    rule = broker.faults.add("send", "refuse", topic="Orders", times=1)
    with broker.faults.add("pull", "delay", group="billing", delay="5s"):
        broker.advance("10s")                   # the answer comes 5 s late, on the clock
    rule.hits, broker.faults.list(), broker.faults.clear()

On a RemoteBroker (a `serve` over TCP, any client in any language) ``remote.faults`` is
the same API over the wire (EMULATOR_FAULTS, what `rocketmq-emulator fault` sends).

A rule goes to every broker of a cluster as one rule (``broker=NAME``: it only matches
there): "times=1" is the next match anywhere in the cluster; its handle's hits are the
cluster's, and remove() takes it off every broker. The rules are
the broker's (broker/faults/rules.py): the same for every client, every dialect and every
transport, each applied fault a FAULT event.
"""
from __future__ import annotations

from rocketmq_emulator.broker.facade.across import clear_fault_rules, fault_rules, place_fault_rule, remove_fault_rule
from rocketmq_emulator.broker.faults.rules import FaultError, rule_from
from rocketmq_emulator.delay_scheduler.levels import parse_duration

__all__ = ["Faults", "FaultHandle", "RemoteFaults", "RemoteFaultHandle", "FaultError"]


def _ms(value, field: str) -> int:
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except ValueError as exc:
            raise FaultError(f"{field}: {exc}") from None
    return value


class FaultHandle:
    """One rule on one or more brokers: ``hits``, ``remove()``; a context manager that
    removes it on exit."""

    def __init__(self, cores: list, rule) -> None:
        self._cores = cores
        self.rule = rule                    # one object on every broker (place_fault_rule)

    @property
    def id(self) -> int:
        return self.rule.id

    @property
    def hits(self) -> int:
        return self.rule.hits

    def remove(self) -> None:
        """Remove the rule everywhere (a rule already gone is not an error)."""
        remove_fault_rule(self._cores, self.rule.id)

    def __enter__(self) -> "FaultHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()

    def __repr__(self) -> str:
        rule = self.rule
        return f"FaultHandle({rule.action.value} {rule.operation.value}, hits={self.hits})"


class Faults:
    """The fault rules of the brokers ``cores()`` returns."""

    def __init__(self, cores) -> None:
        self._cores = cores

    def add(self, operation: str, action: str, *, topic: str | None = None, group: str | None = None,
            client: str | None = None, dialect: str | None = None, broker: str | None = None,
            times: int | None = None, probability: float | None = None, window=None, delay=0,
            error: str | int | None = None, stored: bool = False) -> FaultHandle:
        """Install a rule (FaultError, a ValueError naming the field, for a bad one).
        ``window``: (start, end) on the broker's clock, each ms or a duration from now
        ("10s"); ``delay``: ms or a duration ("5s")."""
        window_ms = None
        if window is not None:
            try:
                start, end = window
            except (TypeError, ValueError):
                raise FaultError(f"window: (start, end), got {window!r}") from None
            now = self._cores()[0].clock.now_ms()
            window_ms = (now + _ms(start, "window") if isinstance(start, str) else start,
                         now + _ms(end, "window") if isinstance(end, str) else end)
        delay_ms = _ms(delay, "delay")
        cores = self._cores()
        if broker is not None and broker not in {c.config.broker_name for c in cores}:
            raise FaultError(f"broker: no broker named {broker!r} (there are "
                             f"{', '.join(c.config.broker_name for c in cores)})")
        rule = rule_from(operation, action, topic=topic, group=group, client=client, dialect=dialect,
                         broker=broker, times=times, probability=probability, window_ms=window_ms,
                         delay_ms=delay_ms, error=error, stored=stored)
        return FaultHandle(cores, place_fault_rule(cores, rule))

    def list(self) -> list[dict]:
        """Every rule once, with its hit counts and ``brokers``, the brokers it is on."""
        return fault_rules(self._cores())

    def clear(self) -> int:
        """Remove every rule; how many there were (a rule on every broker counts once)."""
        return clear_fault_rules(self._cores())


class RemoteFaultHandle:
    """One rule on a remote ``serve``: ``hits`` (asked of the server), ``remove()``; a
    context manager that removes it on exit."""

    def __init__(self, faults: "RemoteFaults", rule: dict) -> None:
        self._faults = faults
        self.rule = rule                    # the server's answer to the add

    @property
    def id(self) -> int:
        return self.rule["id"]

    @property
    def hits(self) -> int:
        return sum(r["hits"] for r in self._faults.list() if r["id"] == self.id)

    def remove(self) -> None:
        """Remove the rule on every broker (a rule already gone is not an error)."""
        self._faults.remove(self.id)

    def __enter__(self) -> "RemoteFaultHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"RemoteFaultHandle({self.rule['action']} {self.rule['operation']}, id={self.id})"


class RemoteFaults:
    """The fault rules of a remote ``serve`` (``RemoteBroker.faults``): ``request(fields,
    body)`` sends one EMULATOR_FAULTS request and returns the reply's JSON."""

    def __init__(self, request) -> None:
        self._request = request

    def add(self, operation: str, action: str, *, topic: str | None = None, group: str | None = None,
            client: str | None = None, dialect: str | None = None, broker: str | None = None,
            times: int | None = None, probability: float | None = None, window=None, delay=0,
            error: str | int | None = None, stored: bool = False) -> RemoteFaultHandle:
        """As ``EmbeddedBroker.faults.add``; ``window``'s ends are durations from now on
        the server's clock (ms or text). A rule the server refuses is a FaultError with
        the server's line, which names the field."""
        import json

        rule = {"operation": operation, "action": action}
        for name, value in (("topic", topic), ("group", group), ("client", client), ("dialect", dialect),
                            ("broker", broker), ("times", times), ("probability", probability),
                            ("error", error)):
            if value is not None:
                rule[name] = value
        if window is not None:
            try:
                start, end = window
            except (TypeError, ValueError):
                raise FaultError(f"window: (start, end), got {window!r}") from None
            rule["window"] = [start, end]
        if delay:
            rule["delay"] = delay
        if stored:
            rule["stored"] = True
        return RemoteFaultHandle(self, self._request({"action": "add"}, json.dumps(rule).encode(), refused=FaultError))

    def list(self) -> list[dict]:
        """Every broker's rules, with their hit counts (``on``: the broker)."""
        return self._request({"action": "list"})

    def remove(self, rule_id: int) -> bool:
        """Remove rule ``rule_id``; False if it was already gone."""
        return self._request({"action": "remove", "id": rule_id})["removed"]

    def clear(self) -> int:
        """Remove every rule; how many there were."""
        return self._request({"action": "clear"})["cleared"]
