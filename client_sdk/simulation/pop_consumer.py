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

Fault rules (issue 38; there is no gRPC front in a simulation, so the consumer asks the
broker's rules itself, as the 5.x front does for a receive or an ack — dialect "5.x", its
group and topic — and reacts as a 5.x client does): a refused receive is tried again
after the clients' 1 s back-off, a dropped one when its call's deadline has passed (the
long-polling timeout, 20 s, and the back-off), a delayed one is popped at once and handed
over ``delay`` later (the invisible time runs from the pop, so a delay longer than it lets
the message come back meanwhile), a duplicated one hands each message over twice, and a
held group does not receive (it asks again after the back-off). A refused or dropped ack
is only logged by the client: the message comes back when its invisible time ends; a
delayed ack reaches the broker ``delay`` later. An answer whose receipt handle a fault
made stale (acked already, or expired) is refused by the broker and the client goes on.
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from rocketmq_emulator.broker.events import EventKind
from rocketmq_emulator.broker.faults.door import Fault
from rocketmq_emulator.broker.faults.rules import Operation
from rocketmq_emulator.broker.operations import AckOutcome, InvisibleOutcome, PopOutcome, PopRequest
from rocketmq_emulator.broker.retry_lifecycle import rocketmq5_retry_interval_ms
from rocketmq_emulator.store.records import POP_RETRY_SEPARATOR, RETRY_PREFIX

from .in_process import InProcessConsumer, StoredDelivery

if TYPE_CHECKING:
    from .scenario import GroupSpec

__all__ = ["PopConsumer"]

_WAKE_KINDS = (EventKind.STORED, EventKind.REDELIVERED)
RECEIVE_BACKOFF_MS = 1000           # the clients' back-off after a failed receive
RECEIVE_DEADLINE_MS = 20_000        # a receive's long-polling timeout: a dropped one ends then


_DIALECT = "5.x"            # a simulated 5.x client, as fault rules name its dialect
_NOT_RECEIVED = (Fault.REFUSED, Fault.DROPPED, Fault.HELD)


class Delivery(StoredDelivery):
    """A popped copy: its attempt is the delivery attempt the server counts."""

    __slots__ = ("delivery_attempt", "receipt_handle", "topic", "queue_id", "queue_offset", "faulted",
                 "visible_again_ms")

    def __init__(self, popped) -> None:
        super().__init__(popped.record)
        self.faulted = False                         # handed over late or twice by a fault rule
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

    def __init__(self, spec: "GroupSpec", embedded, listener, on_held_back=None) -> None:
        super().__init__(embedded)
        self.spec = spec
        self.listener = listener
        # told of popped deliveries a fault holds back (their invisible time runs: when it
        # ends the broker has them again, whether or not the listener saw them yet)
        self.on_held_back = on_held_back
        self.topic = spec.topic
        self.retry_topic = f"{RETRY_PREFIX}{spec.name}{POP_RETRY_SEPARATOR}{spec.topic}"
        self.invisible_ms = spec.invisible_seconds * 1000

    def start(self) -> "PopConsumer":
        self.connect()
        core = self._core()
        try:
            gc = core.group_config(self.spec.name)          # (auto-created, as a 5.x client's group is)
            if gc.retry_max_times != self.spec.max_attempts_failed - 1:
                failure = core.update_group(replace(gc, retry_max_times=self.spec.max_attempts_failed - 1))
                if failure is not None:
                    raise OSError(f"cannot write the group config of {self.spec.name}: {failure}")
        finally:
            self.transport.core_done()
        self._unsubscribe = core.subscribe_events(self._on_event, kinds=_WAKE_KINDS)
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
        fault = None
        try:
            if core.faults_active:
                if core.fault_held(self.spec.name, self.topic, _DIALECT, count=True):    # (a receive held: counted)
                    self._arm_later(RECEIVE_BACKOFF_MS)
                    return
                fault = core.fault_outcome(Operation.PULL, self.topic, self.spec.name, None, _DIALECT)
                if fault is not None and fault.kind in _NOT_RECEIVED:
                    self._arm_later(RECEIVE_DEADLINE_MS + RECEIVE_BACKOFF_MS if fault.kind is Fault.DROPPED
                                    else RECEIVE_BACKOFF_MS)
                    return
            result = core.pop(PopRequest(self.spec.name, self.topic, max_msgs=self.spec.batch_size,
                                         invisible_ms=self.invisible_ms, sql=self.spec.sql or None))
        finally:
            self.transport.core_done()
        if result.outcome is not PopOutcome.FOUND:
            return
        deliveries = [Delivery(popped) for popped in result.messages]
        if fault is not None and fault.kind in (Fault.DELAYED, Fault.DUPLICATED):
            visible_again = self.embedded.runtime.now_ms() + self.invisible_ms
            for d in deliveries:
                d.faulted = True
                d.visible_again_ms = visible_again
        if fault is not None and fault.kind is Fault.DELAYED:
            if self.on_held_back is not None:
                self.on_held_back(deliveries)
            runtime = self.embedded.runtime
            runtime.call_at(runtime.now_ms() + fault.delay_ms, self._hand_over, deliveries, 1)
        else:
            self._hand_over(deliveries, 2 if fault is not None and fault.kind is Fault.DUPLICATED else 1)
        if len(result.messages) >= self.spec.batch_size:
            self._arm()                 # there may be more

    def _hand_over(self, deliveries: list, times: int) -> None:
        for d in deliveries:
            for _ in range(times):
                if self._closed:        # (a listener may stop the group)
                    return
                self._answer(d)

    def _arm_later(self, delay_ms: int) -> None:
        if not self._armed and not self._closed:
            self._armed = True
            runtime = self.embedded.runtime
            runtime.call_at(runtime.now_ms() + delay_ms, self._receive)

    def _answer(self, d: Delivery) -> None:
        verdict = self.listener(d)
        if verdict == "hang":
            return                      # left to its invisible time
        core = self._core()
        try:
            if verdict == "ok":
                if core.faults_active:
                    fault = core.fault_outcome(Operation.ACK, self.topic, self.spec.name, None, _DIALECT)
                    if fault is not None:
                        d.faulted = True        # (its handle may be stale once the message came back)
                        if fault.kind is Fault.DELAYED:
                            runtime = self.embedded.runtime
                            runtime.call_at(runtime.now_ms() + fault.delay_ms, self._late_ack, d)
                        return          # refused or dropped: the client logs it
                outcome = core.ack(self.spec.name, self.topic, d.receipt_handle)
                if outcome is not AckOutcome.ACKED and not d.faulted:
                    raise AssertionError(f"ack of a delivery in flight: {outcome}")
            else:
                res = core.change_invisible_time(self.spec.name, self.topic, d.receipt_handle,
                                                 rocketmq5_retry_interval_ms(d.delivery_attempt))
                if res.outcome is not InvisibleOutcome.CHANGED and not d.faulted:
                    raise AssertionError(f"change of invisible time of a delivery in flight: {res.outcome}")
        finally:
            self.transport.core_done()

    def _late_ack(self, d: Delivery) -> None:
        """A delayed ack reaches the broker (refused if its receipt handle went stale)."""
        if not self._closed:
            self._call(lambda core: core.ack(self.spec.name, self.topic, d.receipt_handle))
