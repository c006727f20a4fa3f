"""A Pulsar-style consumer for the simulator: what the Pulsar C++ client (inside the
Python pulsar-client) does with a DeadLetterPolicy on a Shared subscription, on the
core's subscriptions (broker/pulsar_model/cursors.py), in process, on the run's virtual clock.

As the real client does (reference pulsar-protocol.md §5–§7): it subscribes at the
earliest position and gives the broker permits (a receiver queue of 1000, one permit back
per message handled); the broker pushes each message with its redelivery count. The
listener's verdict: success acks the message; failure is a negative ack, and
``nack_delay_seconds`` later the client asks the broker to redeliver it (the broker adds 1
to its count); an unanswered ("slow") delivery comes back after ``ack_timeout_seconds``.
A message whose count has reached max_redeliver_count (the group's maxReconsumeTimes) is
not sent back once more: the client publishes a copy to the dead-letter topic
``<topic>-<subscription>-DLQ`` (the original's properties, REAL_TOPIC and
ORIGIN_MESSAGE_ID) and acks the original — the DLQ move is the client's, not the
broker's. A copy the broker refuses (write permission off) falls back to a redelivery,
and a delivery above the maximum goes straight back to the DLQ path, as in the client.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from rocketmq_emulator.broker.events import EventKind
from rocketmq_emulator.broker.operations import SendOutcome, SendRequest
from rocketmq_emulator.broker.pulsar_model.cursors import SubscribeOutcome, SubType
from rocketmq_emulator.broker.retry_lifecycle import (pulsar_dead_letter, pulsar_dead_letter_topic,
                                                       pulsar_delivered_dead, pulsar_redelivery)
from rocketmq_emulator.store.records import Prop

from .in_process import InProcessConsumer, StoredDelivery

if TYPE_CHECKING:
    from .scenario import GroupSpec

__all__ = ["PulsarConsumer", "dead_letter_topic"]

RECEIVER_QUEUE = 1000               # the client's receiver_queue_size: its permits


def dead_letter_topic(spec: "GroupSpec") -> str:
    """The clients' default dead-letter topic of a subscription, in the store."""
    return pulsar_dead_letter_topic(spec.topic, spec.name)


class Delivery(StoredDelivery):
    """A pushed message: its attempt is the redelivery count the broker sent."""

    __slots__ = ("queue_offset", "reconsume_times")

    def __init__(self, dispatch) -> None:
        super().__init__(dispatch.record)
        self.queue_offset = dispatch.offset
        self.reconsume_times = dispatch.redelivery_count

    @property
    def queue_id(self) -> int:
        return self.record.queue_id


class PulsarConsumer(InProcessConsumer):
    """One consumer of ``spec``'s Shared subscription on ``embedded``'s core.
    ``listener(delivery)`` returns "ok", "fail" or "hang"; ``on_dead_letter(delivery)``
    is told of each DLQ move. ``start()``; ``shutdown()`` (what it held goes to the
    subscription's other consumers, count unchanged, as when a real client leaves)."""

    what = "Pulsar consumer"

    def __init__(self, spec: "GroupSpec", embedded, listener: Callable, on_dead_letter: Callable) -> None:
        super().__init__(embedded)
        self.spec = spec
        self.listener = listener
        self.on_dead_letter = on_dead_letter
        self.group, self.topic = spec.name, spec.topic
        self.dlq_topic = dead_letter_topic(spec)
        self.max_redeliver_count = spec.max_attempts_failed - 1
        self.nack_delay_ms = spec.nack_delay_seconds * 1000
        self.ack_timeout_ms = spec.ack_timeout_seconds * 1000
        self.held: set[int] = set()           # delivered to the application, not acknowledged

    def start(self) -> "PulsarConsumer":
        self.connect()
        core = self._core()
        try:
            if core.topic_config(self.dlq_topic) is None:      # (the broker auto-creates it for the client)
                core.create_topic(self.dlq_topic, 1, 6)
            outcome = core.pulsar_subscribe(self.group, self.topic, self, SubType.SHARED, earliest=True)
            if outcome is not SubscribeOutcome.OK:
                raise RuntimeError(f"{self.group} cannot subscribe to {self.topic}: {outcome.value}")
            core.pulsar_flow(self, RECEIVER_QUEUE)
            self._unsubscribe = core.subscribe_events(self._on_event, kinds=(EventKind.STORED,))
        finally:
            self.transport.core_done()
        self._arm()
        return self

    def shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._unsubscribe is not None:
            self._unsubscribe()
        self._call(lambda core: core.pulsar_close(self))
        self.transport.close()
        self.held.clear()

    @property
    def holds_messages(self) -> bool:
        return bool(self.held)

    # -- receiving -----------------------------------------------------------------------
    def _on_event(self, event) -> None:
        if event.topic == self.topic:
            self._arm()

    def _receive(self) -> None:
        """Dispatch what the subscription has for its consumers (this one or another of
        the group: the broker picks), and hand each to its consumer."""
        self._armed = False
        if self._closed:
            return
        for d in self._call(lambda core: core.pulsar_dispatch(self.group, self.topic)):
            d.consumer._deliver(d)

    def _deliver(self, d) -> None:
        if self._closed:                # (gone meanwhile: the subscription gave it back)
            return
        self.held.add(d.offset)
        delivery = Delivery(d)
        self._call(lambda core: core.pulsar_flow(self, 1))      # its permit comes back
        if pulsar_delivered_dead(d.redelivery_count, self.max_redeliver_count):
            self._dead_letter(delivery)         # the client does not hand it to the application
            return
        verdict = self.listener(delivery)
        if self._closed:
            return
        if verdict == "ok":
            self._ack(delivery)
        elif verdict == "fail":
            self._later(self.nack_delay_ms, delivery)
        elif self.ack_timeout_ms:               # "hang": never answered; the ack timeout sends it back
            self._later(self.ack_timeout_ms, delivery)

    def _later(self, delay_ms: int, delivery: Delivery) -> None:
        runtime = self.embedded.runtime
        runtime.call_at(runtime.now_ms() + delay_ms, self._redeliver, delivery)

    def _redeliver(self, delivery: Delivery) -> None:
        """The nack delay or the ack timeout has passed: send it back, or to the DLQ."""
        if self._closed or delivery.queue_offset not in self.held:
            return
        if pulsar_redelivery(self.topic, self.group, delivery.reconsume_times, self.max_redeliver_count).dead_letter:
            self._dead_letter(delivery)
            return
        self.held.discard(delivery.queue_offset)
        self._call(lambda core: core.pulsar_redeliver(self, [delivery.queue_offset]))
        self._arm()

    def _dead_letter(self, delivery: Delivery) -> None:
        rec = delivery.record
        props = dict(rec.properties)
        props[Prop.REAL_TOPIC] = self.topic
        props[Prop.ORIGIN_MESSAGE_ID] = rec.offset_msg_id
        decision = pulsar_dead_letter(self.topic, self.group, delivery.reconsume_times, dead_letter_topic=self.dlq_topic)
        request = SendRequest("", decision.topic, rec.body, 0, props, born_timestamp=rec.born_timestamp,
                              reconsume_times=decision.attempt)
        result = self._call(lambda core: core.send(request, self.transport.channel))
        if result.outcome is SendOutcome.STORED:
            self.on_dead_letter(delivery)     # (told first: the ack may move the mark-delete position)
            self._ack(delivery)
        else:                                   # the client falls back to a redelivery
            self.held.discard(delivery.queue_offset)
            self._call(lambda core: core.pulsar_redeliver(self, [delivery.queue_offset]))
            self._arm()

    def _ack(self, delivery: Delivery) -> None:
        self.held.discard(delivery.queue_offset)
        self._call(lambda core: core.pulsar_acks().ack(self, [delivery.queue_offset]))
