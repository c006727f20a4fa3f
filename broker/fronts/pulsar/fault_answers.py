"""Fault rules on the Pulsar wire (issue 38): which command is which operation, what it is
about, and how each action looks to a Pulsar client (pulsar-client 3.13, libpulsar 4.2.0).

The front asks the core's door (``core.fault_outcome``, broker/faults/door.py) once per
command a rule can match and once per MESSAGE it dispatches, through ``fault_answer``,
which translates the outcome with one table, ``_ANSWERS``: (command, outcome) -> what the
wire does. A hold is asked once per subscription dispatched to (``HeldDispatch``, through
``core.fault_held``) and answered by the table's (MESSAGE, HELD) row. With no rule
installed the front tests one attribute, ``core.faults_active``, and asks nothing.

A rule's topic is the topic's full name as the client uses it ("persistent://public/default/
orders"; a partition is "...orders-partition-0": a partitioned topic's producers and
consumers match by their partitions' names, its lookups by its own); its group is the
subscription name (a producer's name for send and PRODUCER); its client is the
connection's "host:port".

* send — SEND (producing.py). refuse: SEND_ERROR with the rule's ServerError, else
  PersistenceError. The client treats every SEND_ERROR but ChecksumError as a broken
  connection: it reconnects and sends its pending messages again, so a rule with
  ``times=N`` or a ``probability`` is retries the application never sees (the message
  stored once). A rule that refuses for good (no count, no probability) also fences the
  topic for that producer while it is installed, as Pulsar fences a topic whose ledger
  failed: its PRODUCER is refused with ServiceNotReady, the client backs off and its send
  timeout fires (``producer.send`` raises Timeout) — without the fence the client would
  reconnect, restart its send timeout and resend for ever. Once the rule is removed the
  producer comes back and sends what is still pending. A refusal with an error Pulsar
  also refuses producers with — ProducerBlockedQuotaExceededException (a backlog quota
  with the producer_exception policy), TopicTerminatedError, ProducerFenced — refuses the
  PRODUCER with it too, and the client fails its pending sends with that error at once.
  (A fenced PRODUCER is not a hit of its own: the rule counts the SENDs it refused.)
  ``error="ChecksumError"`` fails that one message to the application at once
  (``producer.send`` raises ChecksumError; nothing is stored). The client accepts it only
  for the oldest message it waits for, so while an earlier SEND of that producer is
  still unanswered (a drop or a delay rule held its receipt back) the refusal is sent as
  PersistenceError instead: libpulsar 4.2.0 loses its queue's head on a ChecksumError
  for any other message. drop: no receipt (``stored``: stored first); delay: stored, its
  receipt ``delay_ms`` later on the broker's clock.
* heartbeat — CONNECT, SUBSCRIBE, PRODUCER; route — PARTITIONED_METADATA, LOOKUP.
  refuse: ServiceNotReady unless the rule names another ServerError — an ERROR for
  SUBSCRIBE and PRODUCER, the error in the response for a lookup (the client drops an
  ERROR sent to a lookup), an ERROR then the connection closed for CONNECT (the client
  sees a broken handshake). The client retries ServiceNotReady (and a broken connection)
  with backoff until its operation timeout, then raises Timeout — except a first
  SUBSCRIBE or PRODUCER, which libpulsar 4.2.0 does not send again (it believes it is
  still connected): ``subscribe``/``create_producer`` raise Timeout when the operation
  timeout ends, whatever ``times`` says; a reconnecting consumer or producer is retried
  with backoff. A fatal error (TopicNotFound, NotAllowedError, AuthorizationError, ...)
  makes ``subscribe``/``create_producer`` raise at once. drop: no answer (the client's
  operation timeout); delay: the answer ``delay_ms`` later.
* pull — FLOW and the MESSAGEs dispatched. Pulsar never answers FLOW, so a refusal can
  only be the broker closing the consumer (CLOSE_CONSUMER, as when it unloads a topic):
  the client reconnects, subscribes again and sends a full FLOW; what the consumer held
  comes back with its redelivery count unchanged. drop: the FLOW's permits are
  swallowed, nothing is dispatched for it (a consumer whose first FLOW is lost gets
  nothing until it reconnects: the client sends FLOW again only for messages it
  consumed). delay and duplicate are asked for each MESSAGE dispatched: delay sends it
  ``delay_ms`` later on the broker's clock, duplicate sends it twice (one record, one
  pending entry: the consumer sees it twice with the same message id). hold: nothing is
  dispatched to a matched subscription while the rule is active; dispatch resumes when it
  is removed or its window ends.
* ack — ACK. refuse: an ACK that asked for a receipt (a request_id) gets ACK_RESPONSE
  with the rule's ServerError, else PersistenceError (a cursor the broker could not
  write); without one it is dropped. drop: not recorded, no receipt — the message stays
  with the consumer and comes back when the consumer is closed (count unchanged) or asks
  for its unacknowledged messages again (REDELIVER_UNACKNOWLEDGED_MESSAGES: count + 1).
  delay: recorded ``delay_ms`` later (and its receipt then).
* send_back — REDELIVER_UNACKNOWLEDGED_MESSAGES (a nack, an ack timeout,
  ``redeliver_unacknowledged_messages()``). Pulsar never answers it: refuse closes the
  consumer (as for pull: what it held comes back, count unchanged, so the nack did not
  count); drop: ignored, the messages stay with the consumer; delay: applied later.
"""
from __future__ import annotations

import threading

from ...faults.door import Fault, FaultOutcome
from ...faults.rules import Operation, register_error_codes
from ...pulsar_model.names import PulsarNameError, parse_topic
from . import schema as s
from .replies import ack_response, error, frame, send_error

__all__ = ["DIALECT", "refusal_code", "fault_answer", "guarded", "fence", "HeldDispatch"]

DIALECT = "pulsar"          # what fault rules call this wire's clients

_DEFAULT_REFUSAL = {
    Operation.SEND: s.ServerError.PersistenceError,
    Operation.HEARTBEAT: s.ServerError.ServiceNotReady,
    Operation.ROUTE: s.ServerError.ServiceNotReady,
    Operation.ACK: s.ServerError.PersistenceError,
    Operation.PULL: s.ServerError.ServiceNotReady,          # (not sent: a consumer is closed instead)
    Operation.SEND_BACK: s.ServerError.ServiceNotReady,
}
_CODES = frozenset(s.SERVER_ERRORS.values())
# a refused SEND's errors Pulsar also refuses a producer with (the client fails its pending
# messages with them when its PRODUCER is refused so): fence()
_PRODUCER_REFUSALS = frozenset((s.ServerError.ProducerBlockedQuotaExceededException,
                                s.ServerError.ProducerBlockedQuotaExceededError, s.ServerError.TopicTerminatedError,
                                s.ServerError.ProducerFenced))


def server_error(error) -> int | None:
    """A Pulsar ServerError by name (ServiceNotReady) or number, None for neither."""
    if isinstance(error, str):
        error = int(error) if error.isdigit() else s.SERVER_ERRORS.get(error)
    return error if error in _CODES else None


register_error_codes(DIALECT, server_error)


def refusal_code(outcome: FaultOutcome) -> int:
    """The ServerError a refusal carries: the rule's (a ServerError name or number), else
    the operation's default — also for a code Pulsar does not have (a rule for every
    dialect may name another dialect's error)."""
    return _DEFAULT_REFUSAL[outcome.operation] if outcome.code is None else outcome.code


def full_name(topic: str) -> str:
    """A topic's full name, as rules name it (a name the broker refuses later: as given)."""
    try:
        return parse_topic(topic).full
    except PulsarNameError:
        return topic


# -- what each command is about: (cmd, its producer or consumer) -> (topic, group) -------------
def _about_connect(cmd, subject):
    return None, None


def _about_subscribe(cmd, subject):
    return full_name(cmd.subscribe.topic), cmd.subscribe.subscription or None


def _about_producer(cmd, subject):
    return full_name(cmd.producer.topic), cmd.producer.producer_name or None


def _about_lookup(cmd, subject):
    return full_name(cmd.lookupTopic.topic), None


def _about_partitions(cmd, subject):
    return full_name(cmd.partitionMetadata.topic), None


def _about_sender(cmd, p):
    return p.topic, p.name


def _about_consumer(cmd, consumer):
    return consumer.topic, consumer.subscription


# command type -> (its operation, the outcomes asked there (None: all), what it is about).
# MESSAGE: each one dispatched (a pull's FLOW asks for refusals and drops, its MESSAGEs for
# delays and duplicates; a hold is asked per subscription: HeldDispatch).
_ASKED = {
    s.Type.CONNECT: (Operation.HEARTBEAT, None, _about_connect),
    s.Type.SUBSCRIBE: (Operation.HEARTBEAT, None, _about_subscribe),
    s.Type.PRODUCER: (Operation.HEARTBEAT, None, _about_producer),
    s.Type.LOOKUP: (Operation.ROUTE, None, _about_lookup),
    s.Type.PARTITIONED_METADATA: (Operation.ROUTE, None, _about_partitions),
    s.Type.SEND: (Operation.SEND, None, _about_sender),
    s.Type.FLOW: (Operation.PULL, (Fault.REFUSED, Fault.DROPPED), _about_consumer),
    s.Type.MESSAGE: (Operation.PULL, (Fault.DELAYED, Fault.DUPLICATED), _about_consumer),
    s.Type.ACK: (Operation.ACK, None, _about_consumer),
    s.Type.REDELIVER_UNACKNOWLEDGED_MESSAGES: (Operation.SEND_BACK, None, _about_consumer),
}


# -- the answers: (front, outcome, conn, cmd, subject, run) -> the frames to answer with now ------
# ``subject``: the command's producer or consumer (None for those answered once); ``run()``:
# the command's own work, as with no rule, returning its frames (a MESSAGE's: the message).
def _refused_connect(front, outcome, conn, cmd, subject, run):
    conn.closed = True                      # (as a broker that refuses a handshake: ERROR, then closed)
    return [error(0, refusal_code(outcome), outcome.reason)]


def _refused_request(field):
    def refused(front, outcome, conn, cmd, subject, run):
        return [error(getattr(cmd, field).request_id, refusal_code(outcome), outcome.reason)]
    return refused


def _refused_lookup(front, outcome, conn, cmd, subject, run):
    reply = s.BaseCommand(type=s.Type.LOOKUP_RESPONSE)
    r = reply.lookupTopicResponse
    r.request_id, r.response = cmd.lookupTopic.request_id, s.LookupType.Failed
    r.error, r.message = refusal_code(outcome), outcome.reason
    return [frame(reply)]


def _refused_partitions(front, outcome, conn, cmd, subject, run):
    reply = s.BaseCommand(type=s.Type.PARTITIONED_METADATA_RESPONSE)
    r = reply.partitionMetadataResponse
    r.request_id, r.response = cmd.partitionMetadata.request_id, s.PartitionedLookupType.Failed
    r.error, r.message = refusal_code(outcome), outcome.reason
    return [frame(reply)]


def _unanswered(front, outcome, conn, cmd, subject, run):
    """Not done, not answered (the client's timeout decides; FLOW: its permits swallowed)."""
    return []


def _answered_later(front, outcome, conn, cmd, subject, run):
    """Done now, answered ``delay_ms`` later on the broker's clock."""
    answer = run()
    front.core.call_later(outcome.delay_ms, lambda: front.send_later(conn, answer))
    return []


def _done_later(front, outcome, conn, cmd, consumer, run):
    """Done (and answered) ``delay_ms`` later on the broker's clock, if its consumer is
    still open then (a MESSAGE not sent went back to the subscription when it left)."""
    def due() -> None:
        if conn.consumers.get(consumer.consumer_id) is consumer:
            front.send_later(conn, run())
    front.core.call_later(outcome.delay_ms, due)
    return []


def _consumer_closed(front, outcome, conn, cmd, consumer, run):
    """Pulsar answers neither FLOW nor REDELIVER: a refusal closes the consumer."""
    return front.refuse_consumer(consumer)


def _refused_ack(front, outcome, conn, cmd, consumer, run):
    """Not applied; a receipt asked for says why (without one: dropped)."""
    req = cmd.ack
    return [ack_response(req, refusal_code(outcome), outcome.reason)] if req.HasField("request_id") else []


def _sent_twice(front, outcome, conn, cmd, consumer, run):
    return run() * 2                        # the same MESSAGE twice: one record, one pending entry


def _refused_send(front, outcome, conn, cmd, p, run):
    req = cmd.send
    code = refusal_code(outcome)
    if code == s.ServerError.ChecksumError and p.unanswered:
        # the client fails a message on ChecksumError only when it is the oldest it
        # waits for (libpulsar 4.2.0 loses its queue's head otherwise): it is not now
        code = s.ServerError.PersistenceError
    if code in _PRODUCER_REFUSALS or (code != s.ServerError.ChecksumError and outcome.lasting):
        front.fenced[(p.stored, p.name)] = outcome     # the producer is refused too, while it lasts (fence())
    return [send_error(req, code, outcome.reason)]


def _dropped_send(front, outcome, conn, cmd, p, run):
    p.unanswered.add(cmd.send.sequence_id)
    if outcome.stored:
        run()                               # stored, and its receipt lost
    return []                               # no receipt: the client's send timeout decides


def _receipt_later(front, outcome, conn, cmd, p, run):
    answer = run()                          # stored now, its receipt later
    seq = cmd.send.sequence_id
    p.unanswered.add(seq)

    def answer_now() -> None:
        p.unanswered.discard(seq)
        front.send_later(conn, answer)
    front.core.call_later(outcome.delay_ms, answer_now)
    return []


def _dispatch_held(front, outcome, conn, topic, first, run):
    """Nothing dispatched to the subscription; tried again when the rules change or the
    hold's window ends (HeldDispatch asks, per subscription, with no outcome)."""
    front.held.wake_when_window_ends()
    return []


def _answers_once(refused):
    return {Fault.REFUSED: refused, Fault.DROPPED: _unanswered, Fault.DELAYED: _answered_later}


# (command type, outcome) -> its answer on the Pulsar wire: the one table
_ANSWERS = {
    (command, kind): answer
    for command, answers in {
        s.Type.CONNECT: _answers_once(_refused_connect),
        s.Type.SUBSCRIBE: _answers_once(_refused_request("subscribe")),
        s.Type.PRODUCER: _answers_once(_refused_request("producer")),
        s.Type.LOOKUP: _answers_once(_refused_lookup),
        s.Type.PARTITIONED_METADATA: _answers_once(_refused_partitions),
        s.Type.SEND: {Fault.REFUSED: _refused_send, Fault.DROPPED: _dropped_send, Fault.DELAYED: _receipt_later},
        s.Type.FLOW: {Fault.REFUSED: _consumer_closed, Fault.DROPPED: _unanswered},
        s.Type.MESSAGE: {Fault.DELAYED: _done_later, Fault.DUPLICATED: _sent_twice, Fault.HELD: _dispatch_held},
        s.Type.ACK: {Fault.REFUSED: _refused_ack, Fault.DROPPED: _unanswered, Fault.DELAYED: _done_later},
        s.Type.REDELIVER_UNACKNOWLEDGED_MESSAGES: {Fault.REFUSED: _consumer_closed, Fault.DROPPED: _unanswered,
                                                   Fault.DELAYED: _done_later},
    }.items()
    for kind, answer in answers.items()
}


def fault_answer(front, command_type: int, conn, cmd, subject, run) -> list[bytes] | None:
    """The frames to answer ``cmd`` with under the fault rule that fires for it, None
    when none does (the front then goes on as usual). Ask only while
    ``core.faults_active``. ``subject``: its producer or consumer; ``run()``: the
    command's own work (a MESSAGE: ``[the message]``)."""
    operation, kinds, about = _ASKED[command_type]
    topic, group = about(cmd, subject)
    outcome = front.core.fault_outcome(operation, topic, group, conn.peer, DIALECT, kinds)
    if outcome is None:
        return None
    return _ANSWERS[command_type, outcome.kind](front, outcome, conn, cmd, subject, run)


def guarded(command_type: int, handler):
    """``handler`` (a front's handler of a command answered once) with the fault rules of
    its operation asked first: one attribute test while no rule is installed."""
    def run(front, conn, cmd, frame_):
        if front.core.faults_active:
            answer = fault_answer(front, command_type, conn, cmd, None, lambda: handler(front, conn, cmd, frame_))
            if answer is not None:
                return answer
        return handler(front, conn, cmd, frame_)

    run.__name__ = run.__qualname__ = handler.__name__
    run.__doc__ = handler.__doc__
    return run


# -- a producer fenced by its refused SENDs ----------------------------------------------------------
def fence(front, stored: str, name: str) -> tuple[int, str] | None:
    """The ServerError and message a PRODUCER for ``stored`` by ``name`` is refused with
    now, if it is: a fault rule refused its SENDs for good (no count, no chance), or with
    an error Pulsar refuses producers with too, and is still installed, in its window.
    As with a ledger that refuses writes (producing.producer), the client must not get its
    producer back at once — every SEND_ERROR makes it reconnect, and a producer created
    again restarts its send timeout, so it would resend for ever. Refused with
    ServiceNotReady it backs off and its send timeout fails the message
    (``producer.send`` raises Timeout); with the rule's
    ProducerBlockedQuotaExceededException, TopicTerminatedError or ProducerFenced it fails
    its pending messages with that error at once, as under Pulsar's backlog quota, on a
    terminated topic or a fenced producer."""
    outcome = front.fenced.get((stored, name))
    if outcome is None:
        return None
    if front.core.fault_applies(outcome.rule_id):
        code = refusal_code(outcome)
        return (code if code in _PRODUCER_REFUSALS else s.ServerError.ServiceNotReady,
                f"Topic is temporarily unavailable: {outcome.reason}")
    del front.fenced[(stored, name)]
    return None


# -- holds ----------------------------------------------------------------------------------------------
class HeldDispatch:
    """The store topics a hold rule kept from dispatch, marked for dispatch again
    (``redispatch(topic)``) when the rules change or a hold's window ends. Rules change on
    any thread (a test's, the CLI's command): the topics are kept under a lock."""

    def __init__(self, front, redispatch) -> None:
        self._front = front
        self._redispatch = redispatch
        self._topics: set[str] = set()
        self._lock = threading.Lock()
        self._wakes: set[int] = set()           # clock times a hold's window ends and dispatch is tried again

    def holds(self, topic: str, first) -> bool:
        """Whether a hold rule keeps ``topic``'s subscription of consumer ``first`` from
        dispatch now (then answered by the table's (MESSAGE, HELD) row)."""
        core = self._front.core
        if not core.fault_held(first.subscription, first.topic, DIALECT):
            return False
        with self._lock:
            self._topics.add(topic)
        # asked again once noted: a rule removed before the note is seen here, one
        # removed after it finds the note (released); a dispatch held counts on its rule
        if not core.fault_held(first.subscription, first.topic, DIALECT, count=True):
            return False
        _ANSWERS[s.Type.MESSAGE, Fault.HELD](self._front, None, first.conn, topic, first, None)
        return True

    def wake_when_window_ends(self) -> None:
        core = self._front.core
        end = core.fault_hold_ends()
        if end is not None and end not in self._wakes:
            self._wakes.add(end)
            core.call_later(end - core.clock.now_ms(), lambda: self._window_ended(end))

    def _window_ended(self, end: int) -> None:
        self._wakes.discard(end)
        self.release()

    def release(self) -> None:
        """The rules changed (or a hold's window ended): what a hold kept back is tried
        again (dispatched if it no longer holds)."""
        with self._lock:
            held, self._topics = self._topics, set()
        for topic in held:
            self._redispatch(topic)
