"""A retry-letter group for the simulator (seed 000): the SDK's own Pulsar consumer
(client_sdk.pulsar_client) on the run's in-process broker and virtual clock, Shared,
``enable_retry=True``; a failure is ``reconsume_later`` in the group's mode, so every
retry is a new copy in ``<topic>-<subscription>-RETRY`` with RECONSUMETIMES + 1, and the
copy after the last retry goes to ``<topic>-<subscription>-DLQ``.

``Copy`` is what the simulator's listener and checker see of one delivery: a copy of a
message is told apart by (topic, entry) — its commit_log_offset here — and its attempt
is its RECONSUMETIMES.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import rocketmq_emulator.broker.pulsar_model.names as names
from rocketmq_emulator.broker.retry_lifecycle import pulsar_dead_letter_topic
from rocketmq_emulator.store.records import Prop

from ..pulsar_client import ConsumerType, DeadLetterPolicy, InitialPosition, PulsarClient, PulsarClientError
from ..pulsar_client.consumer import MESSAGE_DELAYLEVEL, parse_delay_levels
from .invariants import LOCAL_RETRY_MS

if TYPE_CHECKING:
    from .scenario import GroupSpec

__all__ = ["RetryLetterConsumer", "Copy", "retry_delay_ms", "dead_letter_topic"]

_LEVELS_MS = parse_delay_levels(MESSAGE_DELAYLEVEL)


def pulsar_name(store_topic: str) -> str:
    return names.pulsar_topic(store_topic).full


def dead_letter_topic(spec: "GroupSpec") -> str:
    """The group's dead-letter topic, in the store."""
    return names.store_topic(pulsar_dead_letter_topic(pulsar_name(spec.topic), spec.name))


def retry_delay_ms(spec: "GroupSpec", attempt: int) -> int:
    """How long the retry of failed attempt ``attempt`` (its RECONSUMETIMES) waits."""
    if spec.retry_letters == "delay":
        return spec.retry_delay_seconds * 1000
    level = spec.retry_level if spec.retry_letters == "level" else attempt + 1
    return _LEVELS_MS[min(level, len(_LEVELS_MS)) - 1]


class Copy:
    __slots__ = ("message", "body", "properties", "msg_id", "reconsume_times", "commit_log_offset", "topic",
                 "queue_offset")

    def __init__(self, message) -> None:
        self.message = message
        self.body = message.data()
        self.properties = message.properties()
        self.msg_id = self.properties.get(Prop.UNIQ_KEY, "")
        times = self.properties.get("RECONSUMETIMES", "0")
        self.reconsume_times = int(times) if times.isdigit() else 0
        self.topic = names.store_topic(message.topic_name())
        self.queue_offset = message.message_id().entry
        self.commit_log_offset = (self.topic, self.queue_offset)


class RetryLetterConsumer:
    """``listener(copy) -> "ok" | "fail"``; ``on_dead_letter(copy)`` once a failed copy's
    successor is stored in the dead-letter topic. ``start()``, ``shutdown()``. When the
    broker refuses the retry or dead letter (write permission off), ``reconsume_later``
    raises and the copy stays unacknowledged; the application tries again 5 s later, as
    a 4.x consumer retries a failed send-back locally."""

    def __init__(self, spec: "GroupSpec", embedded, listener: Callable[[Copy], str],
                 on_dead_letter: Callable[[Copy], None]) -> None:
        self.spec = spec
        self.embedded = embedded
        self.listener = listener
        self.on_dead_letter = on_dead_letter
        self.client = None
        self.consumer = None

    def start(self) -> "RetryLetterConsumer":
        spec = self.spec
        self.client = PulsarClient(self.embedded)
        self.consumer = self.client.subscribe(
            pulsar_name(spec.topic), spec.name, consumer_type=ConsumerType.Shared,
            initial_position=InitialPosition.Earliest, enable_retry=True, listener=self._on_message,
            dead_letter_policy=DeadLetterPolicy(max_redeliver_count=spec.max_attempts_failed - 1))
        return self

    def _on_message(self, consumer, message) -> None:
        copy = Copy(message)
        if self.listener(copy) == "ok":
            consumer.acknowledge(message)
            return
        self._reconsume(consumer, message, copy)

    def _reconsume(self, consumer, message, copy: Copy) -> None:
        if self.client is None or consumer.closed:
            return                      # (the consumer is gone: the copy comes back from the broker)
        spec = self.spec
        try:
            if spec.retry_letters == "delay":
                consumer.reconsume_later(message, delay_ms=spec.retry_delay_seconds * 1000)
            elif spec.retry_letters == "level":
                consumer.reconsume_later(message, level=spec.retry_level)
            else:
                consumer.reconsume_later(message)
        except PulsarClientError:
            self.embedded.runtime.call_later(LOCAL_RETRY_MS, self._reconsume, consumer, message, copy)
            return
        if copy.reconsume_times >= spec.max_attempts_failed - 1:
            self.on_dead_letter(copy)

    def shutdown(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None
