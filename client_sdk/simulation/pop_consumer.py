"""A 5.x-style consumer for the simulator: the 5.x PushConsumer's behaviour on the
core's pop operations, in process (no gRPC), on the run's virtual clock.

What it does, as the real 5.x clients do (reference rocketmq-5x-grpc.md §4): receive up
to ``batch_size`` visible messages of the topic (and of the group's pop retry topic),
invisible for ``invisible_seconds``; hand each to the listener; on success ack it; on
failure change its invisible time to the retry interval of its delivery attempt (seed
002's table, the customized backoff the server tells the clients). A *slow* delivery is
not answered at all (the consumer hung or died while holding it): it comes back when its
invisible time ends. The server counts the attempts and, after retryMaxTimes + 1
deliveries, moves the message to %DLQ%<group> — the consumer never sends anything back.

It receives when the core stores something it may read (a send, a redelivery into the
pop retry topic) and again after a full batch, so it never polls an idle broker.
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from rocketmq_emulator.broker.events import EventKind
from rocketmq_emulator.broker.operations import AckOutcome, InvisibleOutcome, PopOutcome, PopRequest
from rocketmq_emulator.broker.retry_lifecycle import ROCKETMQ5_UNORDERED_INTERVALS_MS
from rocketmq_emulator.store.records import POP_RETRY_SEPARATOR, RETRY_PREFIX

from .in_process import InProcessConsumer, StoredDelivery

if TYPE_CHECKING:
    from .scenario import GroupSpec

__all__ = ["PopConsumer", "retry_interval_ms"]

_WAKE_KINDS = (EventKind.STORED, EventKind.REDELIVERED)


def retry_interval_ms(delivery_attempt: int) -> int:
    """The invisible time a failed delivery gets: the n-th value of seed 002's table for
    delivery n, the last one reused (the Python client's customized backoff)."""
    table = ROCKETMQ5_UNORDERED_INTERVALS_MS
    return table[min(delivery_attempt, len(table)) - 1]


class Delivery(StoredDelivery):
    """A popped copy: its attempt is the delivery attempt the server counts."""

    __slots__ = ("delivery_attempt", "receipt_handle", "topic", "queue_id", "queue_offset")

    def __init__(self, popped) -> None:
        super().__init__(popped.record)
        self.delivery_attempt = popped.delivery_attempt
        self.receipt_handle = popped.receipt_handle
        self.topic = popped.topic
        self.queue_id = popped.queue_id              # where the delivered copy is stored (record.topic)
        self.queue_offset = popped.queue_offset

    @property
    def reconsume_times(self) -> int:
        return self.delivery_attempt - 1


class PopConsumer(InProcessConsumer):
    """One 5.x consumer of ``spec``'s group on ``embedded``'s core. ``listener(delivery)``
    returns "ok", "fail" or "hang". ``start()``; ``shutdown()`` (in-flight deliveries
    are left to their invisible time, as when a real client goes away)."""

    what = "5.x consumer"

    def __init__(self, spec: "GroupSpec", embedded, listener) -> None:
        super().__init__(embedded)
        self.spec = spec
        self.listener = listener
        self.topic = spec.topic
        self.retry_topic = f"{RETRY_PREFIX}{spec.name}{POP_RETRY_SEPARATOR}{spec.topic}"
        self.invisible_ms = spec.invisible_seconds * 1000

    def start(self) -> "PopConsumer":
        self.connect()
        core = self._core()
        try:
            gc = core.groups.find(self.spec.name)          # (auto-created, as a 5.x client's group is)
            if gc.retry_max_times != self.spec.max_attempts_failed - 1:
                failure = core.update_group(replace(gc, retry_max_times=self.spec.max_attempts_failed - 1))
                if failure is not None:
                    raise OSError(f"cannot write the group config of {self.spec.name}: {failure}")
        finally:
            self.transport.core_done()
        self._unsubscribe = core.events.subscribe(self._on_event, kinds=_WAKE_KINDS)
        self._arm()
        return self

    def shutdown(self) -> None:
        self._closed = True
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self.transport is not None:
            self.transport.close()

    # -- receiving -----------------------------------------------------------------------
    def _on_event(self, event) -> None:
        if event.topic == self.topic or event.topic == self.retry_topic:
            self._arm()

    def _receive(self) -> None:
        self._armed = False
        if self._closed:
            return
        core = self._core()
        try:
            result = core.pop(PopRequest(self.spec.name, self.topic, max_msgs=self.spec.batch_size,
                                         invisible_ms=self.invisible_ms))
        finally:
            self.transport.core_done()
        if result.outcome is not PopOutcome.FOUND:
            return
        for popped in result.messages:
            if self._closed:            # (a listener may stop the group)
                return
            self._answer(Delivery(popped))
        if len(result.messages) >= self.spec.batch_size:
            self._arm()                 # there may be more

    def _answer(self, d: Delivery) -> None:
        verdict = self.listener(d)
        if verdict == "hang":
            return                      # left to its invisible time
        core = self._core()
        try:
            if verdict == "ok":
                outcome = core.ack(self.spec.name, self.topic, d.receipt_handle)
                if outcome is not AckOutcome.ACKED:
                    raise AssertionError(f"ack of a delivery in flight: {outcome}")
            else:
                res = core.change_invisible_time(self.spec.name, self.topic, d.receipt_handle,
                                                 retry_interval_ms(d.delivery_attempt))
                if res.outcome is not InvisibleOutcome.CHANGED:
                    raise AssertionError(f"change of invisible time of a delivery in flight: {res.outcome}")
        finally:
            self.transport.core_done()
