"""A fault rule's outcome in 4.x terms (issue 38, 48): the dialect's name, its refusal
codes — the rule's, else the operation's default — and the remark of a pull a hold
kept. The codes are the 4.x codec's, as the typed results' are (typed.py): the 4.x
front (fault_answers.py) and the SDK's in-process transport read them here."""
from __future__ import annotations

from ....faults.rules import Operation
from .codes import ResponseCode

__all__ = ["DIALECT", "HELD_REMARK", "response_code", "refusal_code"]

DIALECT = "4.x"                             # what fault rules call this wire's clients
HELD_REMARK = "held by a fault rule"        # a held pull's "not found" says why

# the codes a 4.x client treats as "this broker failed, try again or elsewhere"
# (SYSTEM_ERROR for a send, which DefaultMQProducer retries on another broker;
# TOPIC_NOT_EXIST for a route)
_DEFAULT_REFUSAL = {
    Operation.SEND: ResponseCode.SYSTEM_ERROR,
    Operation.PULL: ResponseCode.SYSTEM_ERROR,
    Operation.SEND_BACK: ResponseCode.SYSTEM_ERROR,
    Operation.ACK: ResponseCode.SYSTEM_ERROR,
    Operation.HEARTBEAT: ResponseCode.SYSTEM_ERROR,
    Operation.ROUTE: ResponseCode.TOPIC_NOT_EXIST,
}


def response_code(error) -> int | None:
    """A 4.x response code by name (SYSTEM_BUSY) or number, None for neither."""
    try:
        return int(error)
    except (TypeError, ValueError):
        code = getattr(ResponseCode, str(error), None)
        return None if code is None else int(code)


def refusal_code(outcome) -> int:
    """A refused FaultOutcome's code (the rule's, when 4.x has it), else the operation's
    default."""
    return _DEFAULT_REFUSAL[outcome.operation] if outcome.code is None else outcome.code
