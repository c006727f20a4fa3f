"""The one retry decision: what becomes of a message whose delivery failed, in each of
the three dialects the broker serves. Everything that decides "retry or dead letter,
where, after how long, with which count and properties" lives here (h11's rule for
its ``_state.py``): the core stores the copy a decision describes, as returned; the
SDK's client-side rules (Pulsar's reconsume_later and dead-letter policy, a 4.x
client's fallback copy) and the simulator's consumers ask the same functions.

Every dialect counts failures the same way: a message is dead-lettered once its
failed deliveries exceed the maximum of retries (``exhausted``), so it is delivered
``1 + max`` times at most ("if the maximum number of retries is three, the message can
be delivered four times", seed 002). What differs is where the count lives and what
the copy looks like:

* RocketMQ 4.x (CONSUMER_SEND_MSG_BACK, a client's fallback send to %RETRY%<group>):
  the count is the message's reconsume times; a retry is a copy with reconsume times
  + 1 in %RETRY%<group> at delay level ``delayLevel`` or, when the client leaves it 0,
  ``3 + reconsumeTimes``; the dead letter goes to %DLQ%<group> (also when the client
  asks with a negative level).
* RocketMQ 5.x (pop: nack, invisible time ending, FIFO exhaustion, forward to DLQ): the
  count is the delivery attempt; a retry is a copy in the pop retry topic
  %RETRY%<group>+<topic>, visible at once (the invisible time was the interval: the
  unordered table, or a fixed interval for a FIFO group); the dead letter goes to
  %DLQ%<group> with reconsume times attempt + 1, as the proxy's pop-time check adds one.
* RocketMQ transactions (4.x and 5.x producers; a ladder on the producer's side): a
  half message left unresolved is checked back with its producer ``transactionTimeOut``
  after it was stored (or its CHECK_IMMUNITY_TIME_IN_SECONDS), then every
  ``transactionCheckInterval``; each check stores a copy in the half topic with
  TRANSACTION_CHECK_TIMES + 1; once ``transactionCheckMax`` checks went unanswered it is
  discarded into TRANS_CHECK_MAX_TIME_TOPIC (upstream's needDiscard and
  resolveDiscardMsg).
* Pulsar (seeds 000, 001, 003): a negative ack or an ack timeout redelivers in place
  with redelivery count + 1 (the broker counts); with a dead-letter policy the client
  moves the message to ``<topic>-<subscription>-DLQ`` instead once it has been
  redelivered ``maxRedeliverCount`` times. ``reconsumeLater`` sends a copy with
  RECONSUMETIMES + 1 to the retry-letter topic ``<topic>-<subscription>-RETRY`` after
  the application's delay, or to the dead-letter topic once that count passes the
  maximum.
"""
from __future__ import annotations

from dataclasses import dataclass

from rocketmq_emulator.store.accounting import PULSAR_DLQ_SUFFIX, PULSAR_RETRY_SUFFIX
from rocketmq_emulator.store.records import (DLQ_PREFIX, POP_RETRY_SEPARATOR, RETRY_PREFIX, TRANS_CHECK_MAX_TIME_TOPIC,
                                             TRANS_HALF_TOPIC, Prop)

__all__ = ["RetryDecision", "exhausted",
           "rocketmq4_send_back", "rocketmq4_retry_send", "rocketmq4_client_fallback",
           "rocketmq5_after_failure", "rocketmq5_retry_interval_ms",
           "pulsar_redelivery", "pulsar_dead_letter", "pulsar_delivered_dead", "pulsar_reconsume_later",
           "retry_topic", "dlq_topic", "pop_retry_topic", "pulsar_retry_letter_topic", "pulsar_dead_letter_topic",
           "RETRY_PREFIX", "DLQ_PREFIX", "PULSAR_RETRY_SUFFIX", "PULSAR_DLQ_SUFFIX",
           "DEFAULT_MAX_RECONSUME_TIMES", "FIRST_RETRY_LEVEL", "FIFO_RETRY_INTERVAL_MS",
           "ROCKETMQ5_UNORDERED_INTERVALS_MS",
           "transaction_first_check_ms", "transaction_check", "TRANSACTION_TIMEOUT_MS",
           "TRANSACTION_CHECK_INTERVAL_MS", "TRANSACTION_CHECK_MAX"]

# -- the tables ---------------------------------------------------------------------------------
# maxReconsumeTimes (4.x client), retryMaxTimes (4.x/5.x subscription group): 16 retries.
DEFAULT_MAX_RECONSUME_TIMES = 16
# RocketMQ 4.x: a send-back without a level asks for 3 + reconsumeTimes (level 3 = 10 s first).
FIRST_RETRY_LEVEL = 3
_S, _M, _H = 1000, 60_000, 3_600_000
# RocketMQ 5.x, seed 002 "Retry interval", unordered messages: retry n waits the n-th value;
# beyond the 16th, 2 hours each (the durations of 4.x delay levels 3..18).
ROCKETMQ5_UNORDERED_INTERVALS_MS = (10 * _S, 30 * _S, 1 * _M, 2 * _M, 3 * _M, 4 * _M, 5 * _M, 6 * _M, 7 * _M,
                                    8 * _M, 9 * _M, 10 * _M, 20 * _M, 30 * _M, 1 * _H, 2 * _H)
# RocketMQ 5.x, seed 002: an ordered (FIFO) message is retried at a fixed interval.
FIFO_RETRY_INTERVAL_MS = 3000
# RocketMQ transactions (BrokerConfig's transactionTimeOut, transactionCheckInterval,
# transactionCheckMax): the first check 6 s after the half message, then one a minute, 15
# in all; the broker's config may change each.
TRANSACTION_TIMEOUT_MS = 6 * _S
TRANSACTION_CHECK_INTERVAL_MS = 60 * _S
TRANSACTION_CHECK_MAX = 15
# (RETRY_PREFIX, DLQ_PREFIX, POP_RETRY_SEPARATOR and the Pulsar suffixes are the store's:
# its accounting reads those names.)


# -- names ---------------------------------------------------------------------------------------
def retry_topic(group: str) -> str:
    """%RETRY%<group>: a 4.x group's retry topic."""
    return RETRY_PREFIX + group


def dlq_topic(group: str) -> str:
    """%DLQ%<group>: a RocketMQ group's dead-letter topic (4.x and 5.x)."""
    return DLQ_PREFIX + group


def pop_retry_topic(group: str, topic: str) -> str:
    """The pop retry topic of a (group, topic): upstream's V2 naming (enableRetryTopicV2),
    %RETRY%<group>+<topic>. V1's ``_`` is ambiguous when names contain ``_``; ``+`` is
    illegal in user names, so the store's accounting can tell the group from the name."""
    return f"{RETRY_PREFIX}{group}{POP_RETRY_SEPARATOR}{topic}"


def pulsar_retry_letter_topic(topic: str, subscription: str) -> str:
    """Seed 000's "[topic name]-[subscription name]-RETRY"."""
    return f"{topic}-{subscription}{PULSAR_RETRY_SUFFIX}"


def pulsar_dead_letter_topic(topic: str, subscription: str) -> str:
    """Seed 000's "[topic name]-[subscription name]-DLQ"."""
    return f"{topic}-{subscription}{PULSAR_DLQ_SUFFIX}"


# -- the decision --------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RetryDecision:
    """What to do with a failed delivery, whole. ``topic`` and ``queue_id`` are where the
    copy goes (for a Pulsar redelivery in place: the message's own topic, no copy);
    ``attempt`` is the count the copy (or the redelivery) carries — reconsume times,
    delivery attempt, redelivery count, as the dialect names it; ``delay_level`` (4.x)
    and ``delay_ms`` (a duration) are 0 when it is due at once; a dead letter is never
    delayed. ``properties`` are the copy's, complete (None: no copy is written)."""

    dead_letter: bool
    topic: str
    attempt: int
    delay_level: int = 0
    delay_ms: int = 0
    properties: dict[str, str] | None = None
    queue_id: int = 0


def exhausted(failures: int, max_retries: int) -> bool:
    """Whether ``failures`` failed deliveries use up ``max_retries`` retries: a message
    is delivered at most ``1 + max_retries`` times, in every dialect."""
    return failures > max_retries


# -- RocketMQ 4.x -------------------------------------------------------------------------------
_RETRY_TOPIC, _ORIGIN = Prop.RETRY_TOPIC, Prop.ORIGIN_MESSAGE_ID


def rocketmq4_send_back(group: str, properties: dict[str, str], topic: str, offset_msg_id: str,
                        reconsume_times: int, max_reconsume_times: int, delay_level: int,
                        retry_queue_id: int) -> RetryDecision:
    """CONSUMER_SEND_MSG_BACK of a stored message (its ``properties``, ``topic``,
    ``offset_msg_id`` and ``reconsume_times``): the copy goes to queue ``retry_queue_id``
    of %RETRY%<group> (the caller draws it among retryQueueNums) or to queue 0 of
    %DLQ%<group>. The copy keeps every property and gains RETRY_TOPIC (the first time),
    ORIGIN_MESSAGE_ID (the first copy's original, kept ever after), WAIT=false and DELAY
    (0 for the DLQ)."""
    # (it runs for every send-back: ``exhausted``, ``retry_topic`` and ``dlq_topic`` inlined,
    # ``in`` and ``[]`` rather than ``get``)
    props = dict(properties)
    if _RETRY_TOPIC not in props or not props[_RETRY_TOPIC]:
        props[_RETRY_TOPIC] = topic
    props[Prop.WAIT] = "false"
    dead = reconsume_times + 1 > max_reconsume_times or delay_level < 0
    level = 0 if dead else (delay_level if delay_level > 0 else FIRST_RETRY_LEVEL + reconsume_times)
    props[Prop.DELAY] = str(level)
    if _ORIGIN not in props or not props[_ORIGIN]:
        props[_ORIGIN] = offset_msg_id
    if dead:
        return RetryDecision(True, DLQ_PREFIX + group, reconsume_times + 1, 0, 0, props, 0)
    return RetryDecision(False, RETRY_PREFIX + group, reconsume_times + 1, level, 0, props, retry_queue_id)


def rocketmq4_retry_send(group: str, properties: dict[str, str], reconsume_times: int, max_reconsume_times: int,
                         queue_id: int) -> RetryDecision:
    """A producer's send to %RETRY%<group> (a client's fallback when its send-back
    failed; ``reconsume_times`` is the copy's, already counted by the client): stored as
    sent, in ``queue_id``, or dead-lettered to queue 0 of %DLQ%<group> with DELAY 0 once
    the maximum is reached (the broker's handleRetryAndDLQ)."""
    # upstream compares the copy's count, already + 1, with ">=": one failure earlier than a
    # send-back of the same message would dead-letter it
    if not exhausted(reconsume_times + 1, max_reconsume_times):
        return RetryDecision(False, retry_topic(group), reconsume_times, 0, 0, properties, queue_id)
    props = dict(properties)
    props[Prop.DELAY] = "0"
    return RetryDecision(True, dlq_topic(group), reconsume_times, 0, 0, props, 0)


def rocketmq4_client_fallback(group: str, properties: dict[str, str], topic: str, msg_id: str,
                              reconsume_times: int, max_reconsume_times: int,
                              reconsume_time: int | None = None) -> RetryDecision:
    """The copy a 4.x client publishes to %RETRY%<group> when its send-back failed
    (sendMessageBackAsNormalMessage): DELAY 3 + reconsumeTimes, RECONSUME_TIME (the
    count + 1; an orderly consumer passes its own), MAX_RECONSUME_TIMES, RETRY_TOPIC,
    ORIGIN_MESSAGE_ID; the broker dead-letters it once the maximum is reached
    (``rocketmq4_retry_send``)."""
    props = dict(properties)
    props[Prop.ORIGIN_MESSAGE_ID] = props.get(Prop.ORIGIN_MESSAGE_ID) or msg_id
    props[Prop.RETRY_TOPIC] = topic
    count = reconsume_times + 1 if reconsume_time is None else reconsume_time
    props[Prop.RECONSUME_TIME] = str(count)
    props[Prop.MAX_RECONSUME_TIMES] = str(max_reconsume_times)
    props.pop(Prop.TRAN_MSG, None)
    level = FIRST_RETRY_LEVEL + reconsume_times
    props[Prop.DELAY] = str(level)
    return RetryDecision(False, retry_topic(group), count, level, 0, props)


# -- RocketMQ 5.x -------------------------------------------------------------------------------
def rocketmq5_retry_interval_ms(attempt: int, *, fifo: bool = False,
                                intervals_ms: tuple[int, ...] = ROCKETMQ5_UNORDERED_INTERVALS_MS) -> int:
    """How long a message waits after its delivery ``attempt`` failed: the attempt-th
    interval of the unordered table (the last one beyond it), or FIFO's fixed interval."""
    if fifo:
        return FIFO_RETRY_INTERVAL_MS
    return intervals_ms[min(max(attempt, 1), len(intervals_ms)) - 1]


def rocketmq5_after_failure(group: str, topic: str, attempt: int, max_retries: int, *, fifo: bool = False,
                            properties: dict[str, str] | None = None, offset_msg_id: str = "",
                            force_dead_letter: bool = False) -> RetryDecision:
    """Delivery ``attempt`` (1 = the first) of a message of ``topic`` (the original
    topic, not a retry topic) failed or timed out, or the client forwarded it to the DLQ
    (``force_dead_letter``): retry after the attempt's interval — a copy with reconsume
    times ``attempt`` in the pop retry topic — or dead-letter it to %DLQ%<group> with
    reconsume times ``attempt + 1`` once ``attempt`` deliveries use up ``max_retries``.
    With the message's ``properties``, the copy's: RETRY_TOPIC and ORIGIN_MESSAGE_ID
    kept from the first copy, WAIT=false, no DELAY (the copy is visible at once)."""
    props = None
    if properties is not None:
        props = dict(properties)
        props.setdefault(Prop.RETRY_TOPIC, topic)
        props.setdefault(Prop.ORIGIN_MESSAGE_ID, offset_msg_id)
        props[Prop.WAIT] = "false"
        props.pop(Prop.DELAY, None)
    if force_dead_letter or exhausted(attempt, max_retries):
        return RetryDecision(True, dlq_topic(group), attempt + 1, 0, 0, props)
    return RetryDecision(False, pop_retry_topic(group, topic), attempt, 0,
                         rocketmq5_retry_interval_ms(attempt, fifo=fifo), props)


# -- RocketMQ transactions ------------------------------------------------------------------------
def transaction_first_check_ms(properties: dict[str, str], timeout_ms: int = TRANSACTION_TIMEOUT_MS) -> int:
    """How long after a half message is stored its first check comes: ``timeout_ms``
    (transactionTimeOut), or the producer's CHECK_IMMUNITY_TIME_IN_SECONDS (a 5.x
    client's orphaned_transaction_recovery_duration) when it gives one (-1 or
    unreadable: ``timeout_ms``), as upstream's getImmunityTime reads it."""
    raw = properties.get(Prop.CHECK_IMMUNITY_TIME_IN_SECONDS)
    try:
        seconds = int(raw) if raw else -1
    except ValueError:
        seconds = -1
    return timeout_ms if seconds < 0 else seconds * 1000


def transaction_check(properties: dict[str, str], first_queue_offset: int, *,
                      check_max: int = TRANSACTION_CHECK_MAX,
                      interval_ms: int = TRANSACTION_CHECK_INTERVAL_MS) -> RetryDecision:
    """A half message (its latest copy's ``properties``) is due for a check: check it
    again — a copy in the half topic with TRANSACTION_CHECK_TIMES = ``attempt`` (1 for
    the first check) and TRAN_PREPARED_QUEUE_OFFSET = ``first_queue_offset``, the next
    decision ``delay_ms`` later — or, once ``check_max`` checks were made, discard it
    (``dead_letter``) into TRANS_CHECK_MAX_TIME_TOPIC, with the properties it had."""
    raw = properties.get(Prop.TRANSACTION_CHECK_TIMES)
    try:
        done = int(raw) if raw else 0
    except ValueError:
        done = 0
    if done >= check_max:
        return RetryDecision(True, TRANS_CHECK_MAX_TIME_TOPIC, done, 0, 0, dict(properties), 0)
    props = dict(properties)
    props[Prop.TRANSACTION_CHECK_TIMES] = str(done + 1)
    props[Prop.TRAN_PREPARED_QUEUE_OFFSET] = str(first_queue_offset)
    return RetryDecision(False, TRANS_HALF_TOPIC, done + 1, 0, interval_ms, props, 0)


# -- Pulsar -------------------------------------------------------------------------------------
def pulsar_redelivery(topic: str, subscription: str, redelivery_count: int, max_redeliver_count: int | None,
                      *, dead_letter_topic: str | None = None, delay_ms: int = 0) -> RetryDecision:
    """A negative ack or an ack timeout of a message delivered with ``redelivery_count``:
    redeliver it in place (after ``delay_ms``) with the count + 1, or, with a dead-letter
    policy (``max_redeliver_count``), move it to the dead-letter topic once it has been
    redelivered that many times (seed 001: "When a message exceed the maxDeliverCount
    ... write the message to deadLetterTargetTopic and then mark the message as acked")."""
    if max_redeliver_count is not None and exhausted(redelivery_count + 1, max_redeliver_count):
        return pulsar_dead_letter(topic, subscription, redelivery_count, dead_letter_topic=dead_letter_topic)
    return RetryDecision(False, topic, redelivery_count + 1, 0, delay_ms)


def pulsar_dead_letter(topic: str, subscription: str, redelivery_count: int, *,
                       dead_letter_topic: str | None = None) -> RetryDecision:
    """The dead-letter copy of a message redelivered ``redelivery_count`` times: to the
    policy's topic (default ``<topic>-<subscription>-DLQ``), counting its last failure
    as a 4.x dead letter's reconsume times do."""
    return RetryDecision(True, dead_letter_topic or pulsar_dead_letter_topic(topic, subscription),
                         redelivery_count + 1)


def pulsar_delivered_dead(redelivery_count: int, max_redeliver_count: int | None) -> bool:
    """Whether a message that arrives with ``redelivery_count`` is already past the
    dead-letter policy (the broker redelivered it once more than the client allows, e.g.
    after a reconnect): the client sends it to the dead-letter topic without handing it
    to the application."""
    return max_redeliver_count is not None and exhausted(redelivery_count, max_redeliver_count)


def pulsar_reconsume_later(topic: str, subscription: str, properties: dict[str, str], message_id: str,
                           delay_ms: int, max_redeliver_count: int, *, retry_letter_topic: str | None = None,
                           dead_letter_topic: str | None = None) -> RetryDecision:
    """``consumer.reconsumeLater(msg, delay)``: a copy with RECONSUMETIMES + 1 to the
    retry-letter topic after ``delay_ms``, or to the dead-letter topic once that count
    passes ``max_redeliver_count``. The copy carries REAL_TOPIC (the original topic),
    ORIGIN_MESSAGE_ID (the first message's id, kept ever after), RETRY_TOPIC and
    RECONSUMETIMES, as seed 000's example shows them."""
    props = dict(properties)
    times = int(props.get("RECONSUMETIMES", "0") or 0) + 1
    retry = retry_letter_topic or pulsar_retry_letter_topic(topic, subscription)
    props.setdefault("REAL_TOPIC", topic)
    props.setdefault("ORIGIN_MESSAGE_ID", message_id)
    props["RETRY_TOPIC"] = retry
    props["RECONSUMETIMES"] = str(times)
    if exhausted(times, max_redeliver_count):
        dlq = dead_letter_topic or pulsar_dead_letter_topic(props["REAL_TOPIC"], subscription)
        return RetryDecision(True, dlq, times, 0, 0, props)
    props["DELAY_TIME"] = str(max(delay_ms, 0))
    return RetryDecision(False, retry, times, 0, max(delay_ms, 0), props)
