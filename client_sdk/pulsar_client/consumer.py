"""The SDK's Pulsar consumer: what the Pulsar clients do, in Python style, plus the
retry-letter mechanism of seed 000 in its three modes.

Acknowledgements are sent at once (no grouping). ``negative_acknowledge`` asks the broker
to redeliver ``negative_ack_redelivery_delay_ms`` later, and an unacknowledged message
comes back after ``unacked_messages_timeout_ms``; the broker counts each redelivery
(``Message.redelivery_count()``). With a ``DeadLetterPolicy`` a message whose count has
reached ``max_redeliver_count`` goes to the dead-letter topic instead, as the C++ and Java
clients do: the client publishes a copy (its properties, REAL_TOPIC, ORIGIN_MESSAGE_ID)
and acks the original.

Retry letters (``enable_retry=True``, Shared or Key_Shared as seed 000 says, Exclusive
and Failover retrying at once): the consumer also subscribes to the retry-letter topic
(``<topic>-<subscription>-RETRY``; with ``legacy_retry_names`` the older
``<tenant>/<namespace>/<subscription>-RETRY``). ``reconsume_later(msg)`` acks the message
and publishes a copy to the retry topic, delayed through the broker's delayed delivery,
with REAL_TOPIC, ORIGIN_MESSAGE_ID, RETRY_TOPIC, RECONSUMETIMES (+1) and DELAY_TIME; once
RECONSUMETIMES would pass ``max_redeliver_count`` (16 by default) the copy goes to the
dead-letter topic instead (not subscribed: a user reads it). The delay:

  reconsume_later(msg, delay_ms=...)   any delay, 1 s to 864,000 s (mode 1)
  reconsume_later(msg, level=n)        level n of ``delay_levels`` (mode 2)
  reconsume_later(msg)                 the level of its attempt: 1 s, 5 s, 10 s, ... (mode 3)

``delay_levels`` is seed 000's MESSAGE_DELAYLEVEL, "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m
9m 10m 20m 30m 1h 2h", and may be changed.
"""
from __future__ import annotations

import enum
import logging
from collections import deque
from dataclasses import dataclass
from typing import Callable

import rocketmq_emulator.broker.retry_lifecycle as lifecycle
from rocketmq_emulator.broker.retry_lifecycle import DEFAULT_MAX_RECONSUME_TIMES
import rocketmq_emulator.broker.fronts.pulsar.schema as s
from rocketmq_emulator.delay_scheduler import parse_duration

from .errors import PulsarClientError, PulsarTimeout
from .messages import Message, messages_of

__all__ = ["Consumer", "ConsumerType", "InitialPosition", "DeadLetterPolicy", "MESSAGE_DELAYLEVEL", "parse_delay_levels",
           "MIN_RETRY_DELAY_MS", "MAX_RETRY_DELAY_MS"]

log = logging.getLogger("client_sdk.pulsar")

MESSAGE_DELAYLEVEL = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
MIN_RETRY_DELAY_MS, MAX_RETRY_DELAY_MS = 1000, 864_000_000      # seed 000: 1 to 864,000 seconds


class ConsumerType(enum.IntEnum):
    Exclusive = 0
    Shared = 1
    Failover = 2
    KeyShared = 3


class InitialPosition(enum.IntEnum):
    Latest = 0
    Earliest = 1


@dataclass(frozen=True)
class DeadLetterPolicy:
    """``max_redeliver_count``: deliveries allowed after the first (negative acks and ack
    timeouts) or retries (``reconsume_later``) before the dead-letter topic."""
    max_redeliver_count: int = DEFAULT_MAX_RECONSUME_TIMES
    dead_letter_topic: str | None = None
    retry_letter_topic: str | None = None
    initial_subscription_name: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.max_redeliver_count, int) or self.max_redeliver_count < 1:
            raise ValueError(f"max_redeliver_count must be an integer >= 1, got {self.max_redeliver_count!r}")


class _Channel:
    """One broker subscription of the consumer: its topic, or its retry-letter topic."""

    def __init__(self, consumer_id: int, topic: str) -> None:
        self.consumer_id = consumer_id
        self.topic = topic
        self.handed = 0                 # messages given to the application since the last FLOW


class Consumer:
    def __init__(self, client, topic: str, subscription_name: str, *,
                 consumer_type: ConsumerType = ConsumerType.Exclusive,
                 initial_position: InitialPosition = InitialPosition.Latest,
                 receiver_queue_size: int = 1000, negative_ack_redelivery_delay_ms: int = 60_000,
                 unacked_messages_timeout_ms: int = 0, dead_letter_policy: DeadLetterPolicy | None = None,
                 enable_retry: bool = False, legacy_retry_names: bool = False,
                 delay_levels: str = MESSAGE_DELAYLEVEL,
                 listener: Callable[["Consumer", Message], None] | None = None) -> None:
        if not isinstance(subscription_name, str) or not subscription_name:
            raise ValueError("a subscription name is needed")
        if receiver_queue_size < 1:
            raise ValueError(f"receiver_queue_size must be >= 1, got {receiver_queue_size}")
        if negative_ack_redelivery_delay_ms < 0:
            raise ValueError(f"negative_ack_redelivery_delay_ms cannot be negative: {negative_ack_redelivery_delay_ms}")
        if unacked_messages_timeout_ms and unacked_messages_timeout_ms < 10_000:
            raise ValueError(f"unacked_messages_timeout_ms must be 0 (off) or at least 10000, as Pulsar's clients "
                             f"require; got {unacked_messages_timeout_ms}")
        self.client = client
        self.session = client.session
        self.runtime = client.runtime
        self.topic = _full(topic)
        self.subscription = subscription_name
        self.consumer_type = ConsumerType(consumer_type)
        self.receiver_queue_size = receiver_queue_size
        self.nack_delay_ms = negative_ack_redelivery_delay_ms
        self.ack_timeout_ms = unacked_messages_timeout_ms
        self.policy = dead_letter_policy
        self.listener = listener
        self.delay_levels = parse_delay_levels(delay_levels)
        self.max_reconsume_times = dead_letter_policy.max_redeliver_count if dead_letter_policy else \
            DEFAULT_MAX_RECONSUME_TIMES
        self.dead_letter_topic = (dead_letter_policy and dead_letter_policy.dead_letter_topic) or \
            _letter_topic(self.topic, subscription_name, "DLQ", legacy_retry_names)
        self.retry_topic = None
        if enable_retry:
            self.retry_topic = _full((dead_letter_policy and dead_letter_policy.retry_letter_topic) or
                                     _letter_topic(self.topic, subscription_name, "RETRY", legacy_retry_names))
        self._queue: deque[Message] = deque()
        self._unacked: dict[tuple, Message] = {}          # (channel id, entry, batch) -> handed, not acked
        self._batch_acks: dict[tuple, set[int]] = {}       # (channel id, entry) -> batch indexes acked
        self._producers: dict[str, object] = {}
        self._warned_immediate = False
        self.closed = False
        self.channels = [self._subscribe(self.topic, initial_position)]
        if self.retry_topic is not None:
            self.channels.append(self._subscribe(self.retry_topic, InitialPosition.Earliest))

    # -- subscribing ------------------------------------------------------------------------
    def _subscribe(self, topic: str, position: InitialPosition) -> _Channel:
        channel = _Channel(self.session.next_id(), topic)
        self.session.consumers[channel.consumer_id] = lambda cmd, frame: self._on_message(channel, cmd, frame)
        self.client.lookup(topic)
        self.client.wait(self.session.request(
            "subscribe", s.Type.SUBSCRIBE, topic=topic, subscription=self.subscription,
            subType=int(self.consumer_type), consumer_id=channel.consumer_id, initialPosition=int(position)))
        self._flow(channel, self.receiver_queue_size)
        return channel

    def _flow(self, channel: _Channel, permits: int) -> None:
        self.session.command("flow", s.Type.FLOW, consumer_id=channel.consumer_id, messagePermits=permits)

    def _on_message(self, channel: _Channel, cmd, frame) -> None:
        if self.closed:
            return
        for m in messages_of(cmd, frame, channel.topic, channel):
            if self.policy is not None and m.redelivery_count() > self.policy.max_redeliver_count:
                self._handed(m)                      # not for the application: straight to the DLQ
                self._dead_letter([m])
            elif self.listener is not None:
                self._hand(m)
                self.runtime.call_soon(self._listen, m)
            else:
                self._queue.append(m)

    def _listen(self, m: Message) -> None:
        if not self.closed:
            self.listener(self, m)

    def _hand(self, m: Message) -> None:
        """``m`` goes to the application: its permit comes back, its ack timeout starts."""
        self._handed(m)
        key = _key(m)
        self._unacked[key] = m
        if self.ack_timeout_ms:
            self.runtime.call_later(self.ack_timeout_ms, self._ack_timed_out, key, m)

    def _handed(self, m: Message) -> None:
        channel = m.channel
        channel.handed += 1
        if channel.handed >= max(self.receiver_queue_size // 2, 1):
            self._flow(channel, channel.handed)
            channel.handed = 0

    # -- receiving ------------------------------------------------------------------------------
    def receive(self, timeout_millis: int | None = None) -> Message:
        """The next message. Over TCP it waits up to ``timeout_millis`` (None: for ever);
        in process the wait is on the broker's clock: virtual time moves up to the
        timeout (None: until nothing more is due). PulsarTimeout when none came."""
        if self.listener is not None:
            raise PulsarClientError("this consumer has a listener: messages go to it, not to receive()")
        if not self._queue:
            self._wait_for_message(timeout_millis)
        m = self._queue.popleft()
        self._hand(m)
        return m

    def _wait_for_message(self, timeout_millis: int | None) -> None:
        runtime = self.runtime
        if timeout_millis is not None:
            runtime.run_until(lambda: bool(self._queue) or self.session.lost is not None, timeout_millis)
        elif not runtime.virtual:
            while not self._queue and self.session.lost is None:
                runtime.run_until(lambda: bool(self._queue) or self.session.lost is not None, 3_600_000)
        else:
            runtime.run_until_idle()
            while not self._queue and self.session.lost is None:
                due = runtime.next_deadline()
                if due is None:
                    break
                runtime.advance_to(due)
        if self.session.lost is not None and not self._queue:
            raise PulsarClientError(f"the connection is gone: {self.session.lost}")
        if not self._queue:
            raise PulsarTimeout(f"no message on {self.topic} for {self.subscription}"
                                + (f" within {timeout_millis} ms" if timeout_millis is not None else ""))

    # -- acknowledging -----------------------------------------------------------------------
    def acknowledge(self, message: Message) -> None:
        """Individually. A message of a batch: the entry is acked once all of its are."""
        key = _key(message)
        self._unacked.pop(key, None)
        channel, mid = message.channel, message.message_id()
        if message.batch_size:
            done = self._batch_acks.setdefault((channel.consumer_id, mid.entry), set())
            done.add(mid.batch)
            if len(done) < message.batch_size:
                return
            del self._batch_acks[(channel.consumer_id, mid.entry)]
        self.session.command("ack", s.Type.ACK, consumer_id=channel.consumer_id, ack_type=int(s.AckType.Individual),
                             message_id=[{"ledgerId": mid.ledger, "entryId": mid.entry}])

    def acknowledge_cumulative(self, message: Message) -> None:
        """Everything up to and including ``message`` (Exclusive and Failover only, as
        the Pulsar clients refuse it on Shared and Key_Shared)."""
        if self.consumer_type in (ConsumerType.Shared, ConsumerType.KeyShared):
            raise PulsarClientError("cumulative acknowledgement is not allowed on Shared and Key_Shared subscriptions")
        channel, mid = message.channel, message.message_id()
        entry = mid.entry
        if message.batch_size and mid.batch < message.batch_size - 1:
            entry -= 1                         # the batch is not all acknowledged: up to the entry before
        for key in [k for k, m in self._unacked.items() if m.channel is channel and _before(m, message)]:
            del self._unacked[key]
        if entry >= 0:
            self.session.command("ack", s.Type.ACK, consumer_id=channel.consumer_id,
                                 ack_type=int(s.AckType.Cumulative),
                                 message_id=[{"ledgerId": mid.ledger, "entryId": entry}])

    def negative_acknowledge(self, message: Message) -> None:
        """Redelivered ``negative_ack_redelivery_delay_ms`` from now, with its count + 1
        (or, past the dead-letter policy's maximum, moved to the dead-letter topic)."""
        key = _key(message)
        if self._unacked.pop(key, None) is None:
            return
        self.runtime.call_later(self.nack_delay_ms, self._redeliver, [message])

    def _ack_timed_out(self, key: tuple, m: Message) -> None:
        if self._unacked.get(key) is m:
            del self._unacked[key]
            self._redeliver([m])

    def _redeliver(self, messages: list[Message]) -> None:
        if self.closed:
            return
        if self.policy is not None:
            limit = self.policy.max_redeliver_count
            dead = [m for m in messages if lifecycle.pulsar_redelivery(
                self.topic, self.subscription, m.redelivery_count(), limit).dead_letter]
            if dead:
                self._dead_letter(dead)
                messages = [m for m in messages if m not in dead]
        if not messages:
            return
        by_channel: dict[int, list[Message]] = {}
        for m in messages:
            by_channel.setdefault(m.channel.consumer_id, []).append(m)
        for consumer_id, ms in by_channel.items():
            if self.consumer_type in (ConsumerType.Shared, ConsumerType.KeyShared):
                ids = {(m.message_id().ledger, m.message_id().entry) for m in ms}
                self.session.command("redeliverUnacknowledgedMessages", s.Type.REDELIVER_UNACKNOWLEDGED_MESSAGES,
                                     consumer_id=consumer_id,
                                     message_ids=[{"ledgerId": lg, "entryId": e} for lg, e in sorted(ids)])
            else:       # Exclusive / Failover: everything unacknowledged comes back, in order
                channel = ms[0].channel
                dropped = [m for m in self._queue if m.channel is channel]
                self._queue = deque(m for m in self._queue if m.channel is not channel)
                for key in [k for k, m in self._unacked.items() if m.channel is channel]:
                    del self._unacked[key]
                self.session.command("redeliverUnacknowledgedMessages", s.Type.REDELIVER_UNACKNOWLEDGED_MESSAGES,
                                     consumer_id=consumer_id)
                if dropped:
                    self._flow(channel, len(dropped))

    # -- dead letters and retry letters ----------------------------------------------------------
    def _dead_letter(self, messages: list[Message]) -> None:
        """Publish each to the dead-letter topic, then ack it; if that fails, redeliver."""
        for m in messages:
            props = m.properties()
            props.setdefault("REAL_TOPIC", m.topic_name())
            props.setdefault("ORIGIN_MESSAGE_ID", str(m.message_id()))
            initial = self.policy.initial_subscription_name if self.policy else None
            try:
                self._producer(self.dead_letter_topic, initial).send(m.data(), props, partition_key=m.partition_key())
            except PulsarClientError as exc:
                # (the clients fall back to a redelivery; after the nack delay, so a broker
                # that refuses writes is not asked again and again in one instant)
                log.warning("dead letter of %s to %s failed (%s); it is redelivered after %d ms", m.message_id(),
                            self.dead_letter_topic, exc, self.nack_delay_ms)
                self.runtime.call_later(self.nack_delay_ms, self._plain_redeliver, m)
                continue
            self.acknowledge(m)

    def _plain_redeliver(self, m: Message) -> None:
        if self.closed or self.session.lost is not None:
            return
        self.session.command("redeliverUnacknowledgedMessages", s.Type.REDELIVER_UNACKNOWLEDGED_MESSAGES,
                             consumer_id=m.channel.consumer_id,
                             message_ids=[{"ledgerId": m.message_id().ledger, "entryId": m.message_id().entry}])

    def reconsume_later(self, message: Message, delay_ms: int | str | None = None, *, level: int | None = None) -> None:
        """Consume ``message`` again later through the retry-letter topic (see the module
        notes for the three modes); past the maximum it goes to the dead-letter topic."""
        if self.retry_topic is None:
            raise PulsarClientError("reconsume_later needs a consumer made with enable_retry=True")
        if delay_ms is not None and level is not None:
            raise ValueError("give reconsume_later a delay or a level, not both")
        times = _int(message.properties().get("RECONSUMETIMES"), 0) + 1
        if delay_ms is not None:
            delay = parse_duration(delay_ms) if isinstance(delay_ms, str) else int(delay_ms)
            if not MIN_RETRY_DELAY_MS <= delay <= MAX_RETRY_DELAY_MS:
                raise ValueError(f"a retry delay is 1 s to 864,000 s (seed 000), got {delay} ms")
        else:
            n = times if level is None else level
            if level is not None and not (isinstance(level, int) and 1 <= level <= len(self.delay_levels)):
                raise ValueError(f"a delay level is 1 to {len(self.delay_levels)}, got {level!r}")
            delay = self.delay_levels[min(n, len(self.delay_levels)) - 1]
        if self.consumer_type in (ConsumerType.Exclusive, ConsumerType.Failover):
            if not self._warned_immediate:          # seed 000: no delayed delivery there
                log.warning("%s is %s: reconsume_later retries at once; a delay needs Shared or Key_Shared",
                            self.subscription, self.consumer_type.name)
                self._warned_immediate = True
            delay = 0
        decision = lifecycle.pulsar_reconsume_later(
            self.topic, self.subscription, message.properties(), str(message.message_id()), delay,
            self.max_reconsume_times, retry_letter_topic=self.retry_topic, dead_letter_topic=self.dead_letter_topic)
        initial = self.policy.initial_subscription_name if self.policy and decision.dead_letter else None
        self._producer(decision.topic, initial).send(message.data(), decision.properties,
                                                     partition_key=message.partition_key(),
                                                     deliver_after_ms=decision.delay_ms or None)
        self.acknowledge(message)

    def _producer(self, topic: str, initial_subscription: str | None):
        producer = self._producers.get(topic)
        if producer is None:
            producer = self._producers[topic] = self.client.create_producer(
                topic, initial_subscription_name=initial_subscription)
        return producer

    # -- closing --------------------------------------------------------------------------------
    def unsubscribe(self) -> None:
        for channel in self.channels:
            self.client.wait(self.session.request("unsubscribe", s.Type.UNSUBSCRIBE,
                                                  consumer_id=channel.consumer_id))
            self.session.consumers.pop(channel.consumer_id, None)
        self.channels = []
        self.closed = True

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for channel in self.channels:
            self.session.consumers.pop(channel.consumer_id, None)
            if self.session.lost is None:
                self.client.wait(self.session.request("close_consumer", s.Type.CLOSE_CONSUMER,
                                                      consumer_id=channel.consumer_id))


def _key(m: Message) -> tuple:
    mid = m.message_id()
    return (m.channel.consumer_id, mid.entry, mid.batch)


def _before(m: Message, last: Message) -> bool:
    a, b = m.message_id(), last.message_id()
    return (a.entry, a.batch) <= (b.entry, b.batch)


def _int(text, default: int) -> int:
    return int(text) if isinstance(text, str) and text.isdigit() else default


def _full(topic: str) -> str:
    if "://" in topic:
        return topic
    parts = topic.split("/")
    return "persistent://" + ("/".join(parts) if len(parts) == 3 else "public/default/" + topic)


def _letter_topic(topic: str, subscription: str, kind: str, legacy: bool) -> str:
    """``<topic>-<subscription>-RETRY`` (today's clients) or, legacy,
    ``<domain>://<tenant>/<namespace>/<subscription>-RETRY``."""
    if legacy:
        return f"{topic.rsplit('/', 1)[0]}/{subscription}-{kind}"
    return (lifecycle.pulsar_retry_letter_topic if kind == "RETRY" else lifecycle.pulsar_dead_letter_topic)(
        topic, subscription)


def parse_delay_levels(text: str) -> list[int]:
    try:
        levels = [parse_duration(w) for w in text.split()]
    except Exception:
        raise ValueError(f"delay_levels is durations like {MESSAGE_DELAYLEVEL!r}, got {text!r}") from None
    if not levels:
        raise ValueError("delay_levels needs at least one level")
    return levels
