"""Fault rules on the in-process transport's typed calls (issue 48, item 3).

The broker's door decides, as for every front (``BrokerCore.fault_outcome``, the 4.x
dialect: the SDK is a 4.x client); this is the table that says what each outcome is to a
client in this process — what the 4.x front's answer to the same call
(broker/fronts/remoting/fault_answers.py) is to a client that cannot wait for a late
answer to a synchronous call:

* refused — the call raises MQBrokerError with the 4.x code (the rule's, else the
  operation's default: fault_answers.refusal_code); a pull is answered with it;
* dropped — no answer: a synchronous call raises the in-process "no immediate
  response" timeout (a send ``stored`` first is stored); a pull waits out its reply
  timer; an offset commit is not made;
* delayed — done now, answered later: a synchronous call raises that timeout (the
  late answer finds no one waiting, as on the command path); a pull's answer comes
  ``delay_ms`` later on the broker's clock; a commit is made (only its answer is late);
* duplicated — a pull that found messages answers each twice;
* held — a pull is kept (its commit made) until the rule goes or its suspend time ends
  (then "not found"): the 4.x front's HeldPulls holds it.
"""
from __future__ import annotations

from rocketmq_emulator.broker.faults.door import Fault, FaultOutcome
from rocketmq_emulator.broker.fronts.remoting.protocol.fault_codes import HELD_REMARK, refusal_code
from rocketmq_emulator.broker.operations import PullOutcome, PullRequest, PullResult

from ..errors import MQBrokerError, RemotingTimeoutError

__all__ = ["answer_now", "without_commit", "late_result", "HeldTypedPull", "no_answer"]


def no_answer(code: int) -> RemotingTimeoutError:
    """What a synchronous call in process gets when the broker answers later or never
    (the command path's words)."""
    return RemotingTimeoutError(f"request code {code} got no immediate response in-process "
                                f"(use request_async for suspended pulls)")


def answer_now(outcome: FaultOutcome, run, code: int, what: str):
    """A synchronous call under ``outcome`` (``run()``: the typed operation; ``code``:
    its request code, ``what``: how its error names it): raises, after running it when
    it is done anyway (a delay, a drop stored first)."""
    kind = outcome.kind
    if kind is Fault.REFUSED:
        raise MQBrokerError(refusal_code(outcome), outcome.reason, None, what)
    if kind is Fault.DELAYED or outcome.stored:
        run()
    raise no_answer(code)


def without_commit(request: PullRequest) -> PullRequest:
    """The pull without its piggy-backed offset commit."""
    return PullRequest(request.group, request.topic, request.queue_id, request.offset, request.max_msgs,
                       request.subscription, request.expression_type, request.sub_version, None)


def late_result(outcome: FaultOutcome, result: PullResult) -> PullResult:
    """A found pull's result under a duplicate: each record twice."""
    if outcome.kind is Fault.DUPLICATED and result.outcome is PullOutcome.FOUND and result.records:
        stored = result.stored
        return PullResult(result.outcome, list(result.records) * 2, result.next_offset, result.min_offset,
                          result.max_offset, result.remark, result.tag_codes, result.store_status,
                          None if stored is None else tuple(stored) * 2)
    return result


class HeldTypedPull:
    """A typed pull a hold keeps (HeldPulls' entry): answered "not found" at the offset
    it asked for, or run again through the door."""

    __slots__ = ("transport", "call", "group", "topic")

    def __init__(self, transport, call) -> None:
        self.transport, self.call = transport, call
        self.group, self.topic = call.request.group, call.request.topic

    @property
    def gone(self) -> bool:
        return self.transport.closed

    def not_found(self) -> None:
        request = self.call.request
        low, high = self.transport.hub.core.queue_bounds(request.topic, request.queue_id)
        self.transport._answered(self.call, PullResult(PullOutcome.NO_NEW_MESSAGE, [], request.offset, low, high,
                                                       HELD_REMARK))

    def release(self) -> None:
        self.transport._pull_call(self.call)
