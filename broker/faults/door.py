"""What a fault rule does to one call, decided once for every dialect (issue 48).

The broker's door (``BrokerCore.fault_outcome``) asks the rules (rules.FaultSet) and
hands a front a ``FaultOutcome``: refused (with the rule's error as the asking
dialect's code, or None for the operation's default), dropped (stored first or not),
delayed until a time on the broker's clock, duplicated, or held. A front reads only
this value and translates it — one table per dialect (its fault_answers.py) says which
wire code and which timing each kind is; no front reads a rule.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from .rules import ERROR_CODES, Action, Operation

__all__ = ["Fault", "FaultOutcome", "outcome_of", "decide", "held"]


class Fault(enum.Enum):
    REFUSED = "refused"
    DROPPED = "dropped"
    DELAYED = "delayed"
    DUPLICATED = "duplicated"
    HELD = "held"


_KIND = {Action.REFUSE: Fault.REFUSED, Action.DROP: Fault.DROPPED, Action.DELAY: Fault.DELAYED,
         Action.DUPLICATE: Fault.DUPLICATED, Action.HOLD: Fault.HELD}


@dataclass(frozen=True, slots=True)
class FaultOutcome:
    """One fired rule's effect on one call. ``code``: a refusal's code in the asking
    dialect (None: the operation's default, from the dialect's table; ``error`` then
    says what the rule named, if anything); ``stored``: a dropped send is stored first;
    ``until_ms``/``delay_ms``: when (on the broker's clock) and how much later a delayed
    answer is due; ``lasting``: a refusal that holds for every call while its rule is
    installed (no count, no chance)."""

    kind: Fault
    rule_id: int
    operation: Operation
    code: int | None = None
    error: str | int | None = None
    stored: bool = False
    until_ms: int = 0
    delay_ms: int = 0
    lasting: bool = False

    @property
    def reason(self) -> str:
        """What a refusal's message says (the same words on every wire)."""
        return f"refused by fault rule {self.rule_id} ({self.operation.value})"


def outcome_of(rule, dialect: str | None, now_ms: int) -> FaultOutcome:
    """``rule``'s outcome for a call of ``dialect`` at ``now_ms`` (a refusal's code: the
    rule's error as the dialect's front registered its codes, rules.ERROR_CODES)."""
    kind = _KIND[rule.action]
    if kind is Fault.REFUSED:
        code = None if rule.error is None else _code_in(dialect, rule.error)
        return FaultOutcome(kind, rule.id, rule.operation, code, rule.error,
                            lasting=rule.times is None and (rule.probability is None or rule.probability >= 1))
    if kind is Fault.DELAYED:
        return FaultOutcome(kind, rule.id, rule.operation, until_ms=now_ms + rule.delay_ms, delay_ms=rule.delay_ms)
    return FaultOutcome(kind, rule.id, rule.operation, stored=rule.stored)


def _code_in(dialect: str | None, error) -> int | None:
    resolve = ERROR_CODES.get(dialect)
    return None if resolve is None else resolve(error)


_ACTION = {kind: action for action, kind in _KIND.items()}


def decide(faults, operation: Operation, topic: str | None, group: str | None, client: str | None,
           dialect: str | None, kinds=None) -> FaultOutcome | None:
    """The outcome of the rule of ``faults`` that fires for this call, if one does
    (counted on it, and told as an event: FaultSet.match). ``kinds``: only rules with
    these outcomes (a front that asks at two points of one operation: Pulsar's FLOW for
    refusals and drops, each MESSAGE it dispatches for delays and duplicates)."""
    actions = None if kinds is None else tuple(_ACTION[k] for k in kinds)
    rule = faults.match(operation, topic=topic, group=group, client=client, dialect=dialect, actions=actions)
    if rule is None:
        return None
    return outcome_of(rule, dialect, faults.now_ms() if rule.action is Action.DELAY else 0)


def held(faults, group: str | None, topic: str | None, dialect: str | None, count: bool) -> bool:
    """Whether a hold rule keeps deliveries to ``group`` back now; ``count``: this is a
    request the front holds for it (a hit on the rule), else a look at one already held."""
    if count:
        return faults.hold(group, topic, dialect) is not None
    return faults.holds(group, topic, dialect)
