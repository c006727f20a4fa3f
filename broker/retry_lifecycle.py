"""The one retry lifecycle: what becomes of a message whose delivery failed, in each of
the three dialects the broker serves. Pure decisions, no I/O: the core stores the copy
the decision describes and records its event (BrokerCore.put_message), once.

A decision says whether the message is dead-lettered, which topic the copy goes to,
how long it waits (a 4.x delay level, as an int, or a duration in ms), the copy's
attempt count and its properties. The dialects:

* RocketMQ 4.x (CONSUMER_SEND_MSG_BACK, and a send to %RETRY%<group>): the copy of
  attempt ``reconsume_times + 1`` goes to %RETRY%<group> at delay level
  ``delayLevel`` or, when the client leaves it 0, ``3 + reconsume_times``; it is
  dead-lettered to %DLQ%<group> once ``reconsume_times >= maxReconsumeTimes`` (16 by
  default) or when the client asks with a negative level.
* RocketMQ 5.x (seed 002, server-side retry of push consumers): attempt n + 1 after a
  failed attempt n waits the n-th interval of the unordered table (10 s, 30 s, 1 min ...
  2 h, and 2 h beyond the 16th), or a fixed interval for FIFO groups; the message is
  dead-lettered once it has been delivered ``1 + max retries`` times.
* Pulsar (seeds 000, 001, 003): ``reconsumeLater`` sends a copy with RECONSUMETIMES + 1
  to the retry-letter topic ``<topic>-<subscription>-RETRY`` after the delay the
  application gives; once RECONSUMETIMES passes ``maxRedeliverCount`` the copy goes to
  the dead-letter topic ``<topic>-<subscription>-DLQ`` instead. A negative ack or an
  ack timeout redelivers in place with redelivery_count + 1; at ``maxRedeliverCount``
  redeliveries the message is moved to the dead-letter topic.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from rocketmq_emulator.store.accounting import PULSAR_DLQ_SUFFIX, PULSAR_RETRY_SUFFIX
from rocketmq_emulator.store.records import Prop

from .topics import DLQ_PREFIX, RETRY_PREFIX

__all__ = ["RetryDecision", "rocketmq4_send_back", "rocketmq4_retry_send", "rocketmq5_after_failure",
           "pulsar_reconsume_later", "pulsar_redelivery", "ROCKETMQ5_UNORDERED_INTERVALS_MS",
           "PULSAR_RETRY_SUFFIX", "PULSAR_DLQ_SUFFIX"]

_S, _M, _H = 1000, 60_000, 3_600_000
# Seed 002, "Retry interval", unordered messages: retry n waits the n-th value; beyond
# the 16th, 2 hours each. (The same durations as 4.x delay levels 3..18.)
ROCKETMQ5_UNORDERED_INTERVALS_MS = (10 * _S, 30 * _S, 1 * _M, 2 * _M, 3 * _M, 4 * _M, 5 * _M, 6 * _M, 7 * _M,
                                    8 * _M, 9 * _M, 10 * _M, 20 * _M, 30 * _M, 1 * _H, 2 * _H)
# (PULSAR_RETRY_SUFFIX / PULSAR_DLQ_SUFFIX: seed 000's "[topic name]-[subscription name]-RETRY"
# / "-DLQ", defined with the store's accounting, which reads those names)
# RocketMQ 4.x: a send-back without a level asks for 3 + reconsumeTimes (10 s first).
_FIRST_RETRY_LEVEL = 3


@dataclass(frozen=True, slots=True)
class RetryDecision:
    """What to store for a failed delivery. ``delay_level`` (4.x) and ``delay_ms`` (a
    duration) are 0 when the copy is due at once; a dead letter is never delayed."""

    dead_letter: bool
    topic: str
    attempt: int                       # the copy's reconsume times / redelivery count
    delay_level: int = 0
    delay_ms: int = 0
    properties: dict[str, str] = field(default_factory=dict)


# -- RocketMQ 4.x -------------------------------------------------------------------------
def rocketmq4_send_back(group: str, properties: dict[str, str], topic: str, offset_msg_id: str,
                        reconsume_times: int, max_reconsume_times: int, delay_level: int) -> RetryDecision:
    """CONSUMER_SEND_MSG_BACK of a stored message (its ``properties``, ``topic``,
    ``offset_msg_id`` and ``reconsume_times``). The copy keeps every property and gains
    RETRY_TOPIC (the first time), ORIGIN_MESSAGE_ID (the first copy's original, kept
    ever after), WAIT=false and DELAY (0 for the DLQ)."""
    props = dict(properties)
    if not props.get(Prop.RETRY_TOPIC):
        props[Prop.RETRY_TOPIC] = topic
    props[Prop.WAIT] = "false"
    dead = reconsume_times >= max_reconsume_times or delay_level < 0
    level = 0 if dead else (delay_level if delay_level > 0 else _FIRST_RETRY_LEVEL + reconsume_times)
    props[Prop.DELAY] = str(level)
    if not props.get(Prop.ORIGIN_MESSAGE_ID):
        props[Prop.ORIGIN_MESSAGE_ID] = offset_msg_id
    return RetryDecision(dead, (DLQ_PREFIX if dead else RETRY_PREFIX) + group, reconsume_times + 1, level, 0, props)


def rocketmq4_retry_send(group: str, reconsume_times: int, max_reconsume_times: int) -> bool:
    """A producer's send to %RETRY%<group> (the client's fallback when its send-back
    failed): whether it is dead-lettered to %DLQ%<group> instead (handleRetryAndDLQ)."""
    return reconsume_times >= max_reconsume_times


# -- RocketMQ 5.x -------------------------------------------------------------------------
def rocketmq5_after_failure(group: str, topic: str, attempt: int, max_retries: int, *, fifo: bool = False,
                            fifo_interval_ms: int = 3000,
                            intervals_ms: tuple[int, ...] = ROCKETMQ5_UNORDERED_INTERVALS_MS) -> RetryDecision:
    """Delivery ``attempt`` (1 = the first delivery) of a message of ``topic`` failed or
    timed out: retry after the interval of retry number ``attempt`` (the unordered
    table, or a fixed interval for a FIFO group), or dead-letter it once ``attempt``
    reaches ``1 + max_retries`` deliveries ("if the maximum number of retries is three,
    the message can be delivered four times")."""
    if attempt >= 1 + max_retries:
        return RetryDecision(True, DLQ_PREFIX + group, attempt)
    if fifo:
        delay = fifo_interval_ms
    else:
        delay = intervals_ms[min(attempt, len(intervals_ms)) - 1]
    return RetryDecision(False, topic, attempt + 1, 0, delay)


# -- Pulsar ---------------------------------------------------------------------------------
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
    retry = retry_letter_topic or f"{topic}-{subscription}{PULSAR_RETRY_SUFFIX}"
    props.setdefault("REAL_TOPIC", topic)
    props.setdefault("ORIGIN_MESSAGE_ID", message_id)
    props["RETRY_TOPIC"] = retry
    props["RECONSUMETIMES"] = str(times)
    if times > max_redeliver_count:
        dlq = dead_letter_topic or f"{props['REAL_TOPIC']}-{subscription}{PULSAR_DLQ_SUFFIX}"
        return RetryDecision(True, dlq, times, 0, 0, props)
    props["DELAY_TIME"] = str(max(delay_ms, 0))
    return RetryDecision(False, retry, times, 0, max(delay_ms, 0), props)


def pulsar_redelivery(topic: str, subscription: str, redelivery_count: int, max_redeliver_count: int | None,
                      *, dead_letter_topic: str | None = None) -> RetryDecision:
    """A negative ack or an ack timeout of a message delivered ``redelivery_count``
    times before: redeliver it in place with the count + 1, or, with a dead-letter
    policy, move it to the dead-letter topic once the count reaches
    ``max_redeliver_count`` (seed 001: "When a message exceed the maxDeliverCount ...
    write the message to deadLetterTargetTopic and then mark the message as acked")."""
    if max_redeliver_count is not None and redelivery_count >= max_redeliver_count:
        return RetryDecision(True, dead_letter_topic or f"{topic}-{subscription}{PULSAR_DLQ_SUFFIX}",
                             redelivery_count)
    return RetryDecision(False, topic, redelivery_count + 1)
