"""Fault rules on the 4.x wire (issue 38): which request is which operation, what it is
about, and how each action looks to a 4.x client.

The front asks the core's door (``core.fault_outcome``, broker/faults/door.py) once per
request, before its processor runs (with no rule installed that is one attribute test),
and translates the outcome here — one table, ``_ANSWERS``:

* refuse — the response carries the rule's code, else the operation's default
  (protocol/fault_codes.py: SYSTEM_ERROR, TOPIC_NOT_EXIST for a route);
* drop — no response at all: the client's own timeout decides. A send with ``stored``
  is stored first and only its acknowledgement is lost, so the producer's retry stores a
  duplicate;
* delay — the response is sent ``delay_ms`` later on the broker's clock (core.call_later);
* duplicate — a pull that found messages answers each of them twice (the store keeps one
  record; the client sees a redelivery);
  (a pull long polling holds is answered later: the delay or the duplicate acts then);
* hold — a pull of the held group is kept unanswered (its offset commit still recorded),
  as a long poll that finds nothing is: when the rule is removed or its window ends the
  pull is run again and delivers; when the pull's own suspend time runs out first it is
  answered PULL_NOT_FOUND, and the client pulls again into the same hold.

A 4.x consumer commits most offsets inside its pulls (FLAG_COMMIT_OFFSET), not only with
UPDATE_CONSUMER_OFFSET: an ack rule matches those commits too, and a refused or dropped
one is left out of the pull (the pull itself is answered), a delayed one is applied later.
"""
from __future__ import annotations

import dataclasses
import itertools

from ...faults.door import Fault, FaultOutcome
from ...faults.rules import Operation, register_error_codes
from .protocol import RemotingCommand, RequestCode, ResponseCode
from .protocol.fault_codes import DIALECT, HELD_REMARK, refusal_code, response_code
from .protocol.typed import FLAG_COMMIT_OFFSET, FLAG_SUSPEND

__all__ = ["operation_of", "apply_fault", "late_answer", "commit_of_pull", "without_commit", "HeldPulls"]

# request code -> (operation, the header fields naming its topic and group, in the order
# the request types use them: SEND_MESSAGE_V2's short names after the long ones)
_OPERATIONS: dict[int, tuple[Operation, tuple[str, ...], tuple[str, ...]]] = {
    RequestCode.SEND_MESSAGE: (Operation.SEND, ("topic",), ("producerGroup",)),
    RequestCode.SEND_MESSAGE_V2: (Operation.SEND, ("b",), ("a",)),
    RequestCode.SEND_BATCH_MESSAGE: (Operation.SEND, ("b", "topic"), ("a", "producerGroup")),
    RequestCode.PULL_MESSAGE: (Operation.PULL, ("topic",), ("consumerGroup",)),
    RequestCode.CONSUMER_SEND_MSG_BACK: (Operation.SEND_BACK, ("originTopic",), ("group",)),
    RequestCode.UPDATE_CONSUMER_OFFSET: (Operation.ACK, ("topic",), ("consumerGroup",)),
    RequestCode.HEART_BEAT: (Operation.HEARTBEAT, (), ()),
    RequestCode.GET_ROUTEINFO_BY_TOPIC: (Operation.ROUTE, ("topic",), ()),
}

def operation_of(request: RemotingCommand) -> tuple[Operation, str | None, str | None] | None:
    """(operation, topic, group) of a request a rule can match, None for the others."""
    known = _OPERATIONS.get(request.code)
    if known is None:
        return None
    op, topic_fields, group_fields = known
    topic = next((v for v in map(request.header, topic_fields) if v), None)
    group = next((v for v in map(request.header, group_fields) if v), None)
    return op, topic, group


register_error_codes(DIALECT, response_code)


def _held(front, outcome: FaultOutcome, request: RemotingCommand, channel, run) -> None:
    front.held_pulls.hold_command(request, channel)
    return None


def _refused(front, outcome: FaultOutcome, request: RemotingCommand, channel, run) -> RemotingCommand:
    return request.response(refusal_code(outcome), outcome.reason)


def _dropped(front, outcome: FaultOutcome, request: RemotingCommand, channel, run) -> None:
    if outcome.stored:
        run()                                   # stored, and the acknowledgement lost
    return None


def _run_then(front, outcome: FaultOutcome, request: RemotingCommand, channel, run) -> RemotingCommand | None:
    response = run()
    if response is None:                        # a pull held by long polling: the outcome acts on its answer
        front.late_answers[id(request)] = (request, outcome)
        return None
    return _answered(front, outcome, response, channel)


# each outcome on the 4.x wire: (front, outcome, request, channel, run) -> the answer now, or None
_ANSWERS = {Fault.HELD: _held, Fault.REFUSED: _refused, Fault.DROPPED: _dropped, Fault.DELAYED: _run_then,
            Fault.DUPLICATED: _run_then}


def apply_fault(front, outcome: FaultOutcome, request: RemotingCommand, channel, run) -> RemotingCommand | None:
    """The answer to ``request`` under ``outcome`` (``run()``: the processor's own answer)."""
    return _ANSWERS[outcome.kind](front, outcome, request, channel, run)


def _answered(front, outcome: FaultOutcome, response: RemotingCommand, channel) -> RemotingCommand | None:
    """``response`` under a delay or a duplicate (None: it is sent later)."""
    if outcome.kind is Fault.DELAYED:
        front.core.call_later(outcome.delay_ms, lambda: front.push(channel, response))
        return None
    if response.code == ResponseCode.SUCCESS and response.body:
        return dataclasses.replace(response, body=bytes(response.body) * 2)
    return response


def late_answer(front, n, command: RemotingCommand) -> RemotingCommand | None:
    """The answer to a held pull a delay or duplicate rule met when it came in (None:
    it is sent later)."""
    entry = front.late_answers.pop(id(n.context), None)
    if entry is None or entry[0] is not n.context:
        return command
    return _answered(front, entry[1], command, n.channel)


def _suspend_ms(request: RemotingCommand) -> int:
    """How long the client lets its pull wait (0: it did not ask to be suspended)."""
    if not request.header_int("sysFlag", 0) & FLAG_SUSPEND:
        return 0
    return max(request.header_int("suspendTimeoutMillis", 0), 0)


class HeldPulls:
    """The pulls a hold rule keeps unanswered, released when the rules change (checked
    after the change, not inside it: a rule used up inside the door must not re-enter
    the front) or answered "not found" when their suspend time ends.

    A held pull (``hold(pull, suspend_ms)``) says what it is about (``group``,
    ``topic``), whether its client is gone (``gone``), and how it is answered:
    ``not_found()``, or ``release()`` (run again, through the door). A PULL_MESSAGE
    command is one (``hold_command``); the in-process transport's typed pull is another
    (client_sdk/transport/typed_faults.py).

    ``wake``: how a driver with a loop of its own (the TCP listener) runs the check soon
    and writes what it answered, ``wake(fn)``; without one it runs at the broker's next
    tick. (A virtual clock ticks only when it is moved: a removed rule must release its
    pulls at once on either clock.)"""

    def __init__(self, front) -> None:
        self._front = front
        self._waiting: dict[int, object] = {}
        self._ids = itertools.count(1)
        self._recheck_due = False
        self.wake = None
        self.close = front.core.on_faults_changed(self._rules_changed)

    def hold_command(self, request: RemotingCommand, channel) -> None:
        core = self._front.core
        if commit_of_pull(request):             # a hold keeps deliveries back, not the consumer's progress
            core.record_offset_commit(request.header("consumerGroup"), request.header("topic"),
                                      request.header_int("queueId"), request.header_int("commitOffset", 0))
            flag = request.header_int("sysFlag", 0) & ~FLAG_COMMIT_OFFSET
            request = dataclasses.replace(request, ext_fields={**request.ext_fields, "sysFlag": str(flag)})
        self.hold(_HeldCommand(self._front, request, channel), _suspend_ms(request))

    def hold(self, pull, suspend_ms: int) -> None:
        key = next(self._ids)
        self._waiting[key] = pull
        self._front.core.call_later(suspend_ms, lambda: self._time_out(key))

    def _still_held(self, pull) -> bool:
        return self._front.core.fault_held(pull.group, pull.topic, DIALECT)

    def _time_out(self, key: int) -> None:
        pull = self._waiting.pop(key, None)
        if pull is None:
            return
        if not self._still_held(pull):
            self._release(pull)
            return
        pull.not_found()

    def _rules_changed(self) -> None:
        if self._waiting and not self._recheck_due:
            self._recheck_due = True
            if self.wake is not None:
                self.wake(self._recheck)
            else:
                self._front.core.call_later(0, self._recheck)

    def _recheck(self) -> None:
        self._recheck_due = False
        for key, pull in list(self._waiting.items()):
            if not self._still_held(pull):
                del self._waiting[key]
                self._release(pull)

    @staticmethod
    def _release(pull) -> None:
        if not pull.gone:
            pull.release()


class _HeldCommand:
    """A PULL_MESSAGE a hold keeps: answered PULL_NOT_FOUND, or handled again."""

    __slots__ = ("front", "request", "channel", "group", "topic")

    def __init__(self, front, request: RemotingCommand, channel) -> None:
        self.front, self.request, self.channel = front, request, channel
        self.group, self.topic = request.header("consumerGroup"), request.header("topic")

    @property
    def gone(self) -> bool:
        return self.channel.closed

    def not_found(self) -> None:
        request = self.request
        queue_offset = request.header_int("queueOffset", 0)
        low, high = self.front.core.queue_bounds(self.topic, request.header_int("queueId"))
        self.front.push(self.channel, request.response(ResponseCode.PULL_NOT_FOUND, HELD_REMARK, {
            "suggestWhichBrokerId": 0, "nextBeginOffset": queue_offset, "minOffset": low, "maxOffset": high}))

    def release(self) -> None:
        answer = self.front.handle(self.request, self.channel)
        if answer is not None:
            self.front.push(self.channel, answer)



def commit_of_pull(request: RemotingCommand) -> bool:
    """Whether a PULL_MESSAGE carries an offset commit."""
    return request.code == RequestCode.PULL_MESSAGE and bool(request.header_int("sysFlag", 0) & FLAG_COMMIT_OFFSET)


def without_commit(front, outcome: FaultOutcome, request: RemotingCommand) -> RemotingCommand:
    """The pull without its offset commit, as an ack's ``outcome`` leaves it (a delayed
    commit is recorded ``delay_ms`` later on the broker's clock)."""
    if outcome.kind is Fault.DELAYED:
        group, topic = request.header("consumerGroup"), request.header("topic")
        queue_id, offset = request.header_int("queueId"), request.header_int("commitOffset", 0)
        front.core.call_later(outcome.delay_ms,
                              lambda: front.core.record_offset_commit(group, topic, queue_id, offset))
    flag = request.header_int("sysFlag", 0) & ~FLAG_COMMIT_OFFSET
    return dataclasses.replace(request, ext_fields={**request.ext_fields, "sysFlag": str(flag)})
