"""Fault rules on the Pulsar wire (issue 38): which command is which operation, what it is
about, and how each action looks to a Pulsar client (pulsar-client 3.13, libpulsar 4.2.0).

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

from ...faults.door import Fault, FaultOutcome
from ...faults.rules import Operation, register_error_codes
from ...pulsar_model.names import PulsarNameError, parse_topic
from . import schema as s
from .replies import ack_response, error, frame

__all__ = ["DIALECT", "refusal_code", "guarded", "DISPATCH_ACTIONS", "FLOW_ACTIONS"]

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
FLOW_ACTIONS = (Fault.REFUSED, Fault.DROPPED)           # asked at FLOW
DISPATCH_ACTIONS = (Fault.DELAYED, Fault.DUPLICATED)    # asked for each MESSAGE dispatched


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


# -- commands answered once: the handshake, producers, consumers, lookups ------------------------
def _about_connect(cmd):
    return None, None


def _about_subscribe(cmd):
    return full_name(cmd.subscribe.topic), cmd.subscribe.subscription or None


def _about_producer(cmd):
    return full_name(cmd.producer.topic), cmd.producer.producer_name or None


def _about_lookup(cmd):
    return full_name(cmd.lookupTopic.topic), None


def _about_partitions(cmd):
    return full_name(cmd.partitionMetadata.topic), None


def _refused_connect(conn, cmd, code, message):
    conn.closed = True                      # (as a broker that refuses a handshake: ERROR, then closed)
    return [error(0, code, message)]


def _refused_request(field):
    def refused(conn, cmd, code, message):
        return [error(getattr(cmd, field).request_id, code, message)]
    return refused


def _refused_lookup(conn, cmd, code, message):
    reply = s.BaseCommand(type=s.Type.LOOKUP_RESPONSE)
    r = reply.lookupTopicResponse
    r.request_id, r.response, r.error, r.message = cmd.lookupTopic.request_id, s.LookupType.Failed, code, message
    return [frame(reply)]


def _refused_partitions(conn, cmd, code, message):
    reply = s.BaseCommand(type=s.Type.PARTITIONED_METADATA_RESPONSE)
    r = reply.partitionMetadataResponse
    r.request_id, r.response = cmd.partitionMetadata.request_id, s.PartitionedLookupType.Failed
    r.error, r.message = code, message
    return [frame(reply)]


# command type -> (operation, what it is about, its refusal)
_ANSWERED_ONCE = {
    s.Type.CONNECT: (Operation.HEARTBEAT, _about_connect, _refused_connect),
    s.Type.SUBSCRIBE: (Operation.HEARTBEAT, _about_subscribe, _refused_request("subscribe")),
    s.Type.PRODUCER: (Operation.HEARTBEAT, _about_producer, _refused_request("producer")),
    s.Type.LOOKUP: (Operation.ROUTE, _about_lookup, _refused_lookup),
    s.Type.PARTITIONED_METADATA: (Operation.ROUTE, _about_partitions, _refused_partitions),
}


def guarded(command_type: int, handler):
    """``handler`` (a front's handler of a command answered once) with the fault rules of
    its operation asked first: one attribute test while no rule is installed."""
    operation, about, refused = _ANSWERED_ONCE[command_type]

    def run(front, conn, cmd, frame_):
        core = front.core
        if core.faults_active:
            topic, group = about(cmd)
            outcome = core.fault_outcome(operation, topic, group, conn.peer, DIALECT)
            if outcome is not None:
                if outcome.kind is Fault.REFUSED:
                    return refused(conn, cmd, refusal_code(outcome), outcome.reason)
                if outcome.kind is Fault.DROPPED:
                    return []                       # no answer: the client's operation timeout decides
                answer = handler(front, conn, cmd, frame_)     # delay: done now, answered later
                core.call_later(outcome.delay_ms, lambda: front.send_later(conn, answer))
                return []
        return handler(front, conn, cmd, frame_)

    run.__name__ = run.__qualname__ = handler.__name__
    run.__doc__ = handler.__doc__
    return run


# -- acks ---------------------------------------------------------------------------------------
def refused_ack(outcome: FaultOutcome, req, receipt: bool) -> list[bytes]:
    """An ACK refused or dropped: not applied; a receipt asked for says why (refused)."""
    if outcome.kind is Fault.REFUSED and receipt:
        return [ack_response(req, refusal_code(outcome), outcome.reason)]
    return []

