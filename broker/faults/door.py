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

from .rules import Action, Operation

__all__ = ["Fault", "FaultOutcome", "outcome_of"]


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


def outcome_of(rule, dialect: str | None, now_ms: int, resolve) -> FaultOutcome:
    """``rule``'s outcome for a call of ``dialect`` at ``now_ms``; ``resolve(dialect,
    error)``: the dialect's code for the rule's error (None: it has none)."""
    kind = _KIND[rule.action]
    if kind is Fault.REFUSED:
        code = None if rule.error is None else resolve(dialect, rule.error)
        return FaultOutcome(kind, rule.id, rule.operation, code, rule.error,
                            lasting=rule.times is None and (rule.probability is None or rule.probability >= 1))
    if kind is Fault.DELAYED:
        return FaultOutcome(kind, rule.id, rule.operation, until_ms=now_ms + rule.delay_ms, delay_ms=rule.delay_ms)
    return FaultOutcome(kind, rule.id, rule.operation, stored=rule.stored)
