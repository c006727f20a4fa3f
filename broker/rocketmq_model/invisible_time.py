"""The 5.x pop model on the core: receive with an invisible time, ack, change the
invisible time, and what happens when a delivery is neither acked nor renewed
(reference rocketmq-5x-grpc.md §3.6–3.9 and §4; seed 002).

Theory of operation. A group reads a topic by *popping*: each pop hands out visible
messages and makes them invisible until ``visible_at = now + invisible time``. Per
(group, topic, queue) the service keeps the next never-popped offset and the deliveries
in flight; the group's committed offset (the same consumerOffset table 4.x uses) is the
lowest offset still in flight, else the next never-popped one, so a restart re-delivers
what was not acked and never skips it.

Each delivery gets a receipt handle naming its queue, offset and a generation that is
new on every delivery and every change of invisible time, and the time it becomes
visible; ack and change-invisible-time need the current handle of a delivery that has
not become visible yet (else INVALID_RECEIPT_HANDLE, as the proxy answers).

When a delivery's invisible time ends (``tick``), the message is *revived*: the retry
lifecycle (``rocketmq5_after_failure``) decides, and a copy goes either to the pop retry
topic ``%RETRY%<group>+<topic>`` with reconsume times + 1 — visible at once, since the
invisible time was the retry interval — or, once the group's maximum deliveries
(retryMaxTimes + 1) are used, to ``%DLQ%<group>``. Either way the original delivery is
done for its queue. Pops read the retry topic beside the topic (first on one pop in
five, from the core's seeded random, as popFromRetryProbability; else after it), and
return a retried message under the original topic with delivery_attempt = reconsume
times + 1.

In-flight deliveries live in memory: after a restart they are simply visible again
(delivered anew, their attempt unchanged), as an expired pop checkpoint would be.
"""
from __future__ import annotations

import dataclasses
import heapq
from collections import deque
from dataclasses import dataclass, field

from rocketmq_emulator.store import PutStatus
from rocketmq_emulator.store.records import POP_RETRY_SEPARATOR, RETRY_PREFIX, MessageRecord, Prop

from ..config import PERM_READ, PERM_WRITE
from ..views.delivery_log import ACK, EXPIRED, INVISIBLE, NACK, POP
from .sql_filter import SqlFilterError, compile_sql
from ..notifications import VisibleAgain
from ..put_kinds import DEAD_LETTERED, SENT
from .message_types import PRIORITY, SHARDING_KEY
from ..operations import (
    AckOutcome,
    ChangeInvisibleResult,
    InvisibleOutcome,
    PopOutcome,
    PopRequest,
    PopResult,
    PoppedMessage,
)
from ..retry_lifecycle import (
    DEFAULT_MAX_RECONSUME_TIMES,
    RetryDecision,
    pop_retry_topic,
    rocketmq5_after_failure,
)

__all__ = ["PopService", "pop_retry_topic", "MAX_INVISIBLE_MS", "SHARDING_KEY", "POP_RETRY_SEPARATOR"]

MAX_INVISIBLE_MS = 12 * 3600 * 1000          # the proxy's limit for an invisible duration
# Auto-renew, as the proxy's DefaultReceiptHandleManager (reference §4.6, §4.7): each renewal
# makes the delivery invisible for the next of these (the last repeated), for up to 3 h;
# then it is nacked with the retry interval of its attempt. A client that goes away has its
# renewed deliveries visible again after 1 s.
RENEW_STEPS_MS = (60_000, 180_000, 300_000, 600_000, 1_800_000, 3_600_000)
RENEW_FOR_MS = 3 * 3600 * 1000
RELEASE_AFTER_MS = 1000
_RETRY_FIRST_PERCENT = 20                    # popFromRetryProbability
_FIFO_SCAN = 2048                            # entries a FIFO pop looks at past the first not done


@dataclass(slots=True)
class _Delivery:
    generation: int
    visible_at: int
    owner: str = ""             # auto-renew: the client it is renewed for ("": not renewed)
    renew_until: int = 0        # auto-renew: no renewal after this (3 h after the delivery)
    renewals: int = 0
    nacked: bool = False        # given back at once (invisible time 0): not an expiry


@dataclass(slots=True)
class _QueueState:
    """Unordered: ``next_offset`` is the next never-popped offset. FIFO: it is the lowest
    offset not done (acked, dead-lettered or passed over), and a failed delivery is
    delivered again in place — the group's next message waits for it — with its count
    of deliveries in ``deliveries``."""

    next_offset: int
    in_flight: dict[int, _Delivery] = field(default_factory=dict)    # queue offset -> delivery
    fifo: bool = False
    done: set[int] = field(default_factory=set)                       # FIFO: done above next_offset
    deliveries: dict[int, int] = field(default_factory=dict)          # FIFO: offset -> deliveries so far

    def committed(self) -> int:
        if self.fifo:
            return self.next_offset
        return min(self.in_flight) if self.in_flight else self.next_offset

    def finish(self, offset: int) -> None:
        """A delivery is over for good (acked, dead-lettered, revived elsewhere)."""
        self.in_flight.pop(offset, None)
        if self.fifo:
            self.done.add(offset)
            self.deliveries.pop(offset, None)
            while self.next_offset in self.done:
                self.done.remove(self.next_offset)
                self.next_offset += 1


class PopService:
    def __init__(self, store, clock, rng, topics, groups, offsets, put_message, deliveries=None,
                 notify=None) -> None:
        """``put_message``: the core's one put path (BrokerCore.put_message), for the
        retry and dead-letter copies; ``offsets``: the core's OffsetBook; ``deliveries``:
        its DeliveryLog (each receive, ack, nack and expiry is told there); ``notify``:
        the core's Notifier, told when a delivery is visible again in place
        (VisibleAgain: a retry copy's store wakes a held receive, this has no store)."""
        self.store = store
        self.clock = clock
        self.rng = rng
        self.topics = topics
        self.groups = groups
        self.offsets = offsets
        self.put_message = put_message
        self.deliveries = deliveries
        self.notify = notify
        self._queues: dict[tuple[str, str, int], _QueueState] = {}    # (group, stored topic, qid)
        self._expiry: list[tuple[int, int, tuple[str, str, int], int]] = []   # (visible_at, gen, key, offset)
        self._generation = 0
        self._forwarded: deque[str] = deque(maxlen=1024)    # handles already forwarded to the DLQ
        self._renewed: dict[str, set[tuple[tuple[str, str, int], int]]] = {}   # client -> (key, offset)

    # -- pop -----------------------------------------------------------------------------
    def pop(self, req: PopRequest) -> PopResult:
        if not (1 <= req.max_msgs <= 32 and 0 <= req.invisible_ms <= MAX_INVISIBLE_MS):
            return _refusal(req)        # (asked only then: a call fewer on every pop)
        selector = None      # (checked before the topic, as the 5.x proxy checks a filter)
        if req.sql is not None:
            try:
                selector = compile_sql(req.sql)
            except SqlFilterError as exc:
                return PopResult(PopOutcome.ILLEGAL_FILTER_EXPRESSION, remark=str(exc))
        tc = self.topics.get(req.topic)
        if tc is None:
            return PopResult(PopOutcome.TOPIC_NOT_EXIST, remark=f"topic {req.topic} not exist")
        gc = self.groups.find(req.group)
        if gc is None:
            return PopResult(PopOutcome.GROUP_NOT_EXIST, remark=f"subscription group not exist, {req.group}")
        now = self.clock.now_ms()
        self.revive_due(now)
        retry = pop_retry_topic(req.group, req.topic)
        if req.queue_id >= 0:
            if req.queue_id >= tc.read_queue_nums:
                return PopResult(PopOutcome.ILLEGAL_ARGUMENT, remark=f"queue {req.queue_id} of {req.topic} does not "
                                                                     f"exist (it has {tc.read_queue_nums})")
            sources = [(req.topic, req.queue_id)]
        elif tc.message_type == PRIORITY:
            # a queue per priority, the highest first: strictly by priority on this broker
            sources = [(req.topic, q) for q in range(tc.read_queue_nums - 1, -1, -1)]
        else:
            sources = [(req.topic, q) for q in range(tc.read_queue_nums)]
        if req.queue_id < 0 and self.topics.get(retry) is not None:
            retry_sources = [(retry, 0)]
            sources = retry_sources + sources if self.rng.randrange(100) < _RETRY_FIRST_PERCENT \
                else sources + retry_sources
        out: list[PoppedMessage] = []
        for topic, qid in sources:
            if req.fifo and topic == req.topic:
                self._pop_fifo(req, qid, now, out, selector)
            else:
                self._pop_queue(req, topic, qid, now, out, selector)
            if len(out) >= req.max_msgs:
                break
        if not out:
            return PopResult(PopOutcome.NO_NEW_MESSAGE, remark="no new message")
        return PopResult(PopOutcome.FOUND, out)

    def pop_lite(self, req: PopRequest, stored_topics: list[str]) -> PopResult:
        """A lite consumer's receive: the one-queue topics of the lite topics it
        subscribed to, each in order with a failed message delivered again in place
        (lite_topics.py); the messages come under their stored topic."""
        if not (1 <= req.max_msgs <= 32 and 0 <= req.invisible_ms <= MAX_INVISIBLE_MS):
            return _refusal(req)
        if self.groups.find(req.group) is None:
            return PopResult(PopOutcome.GROUP_NOT_EXIST, remark=f"subscription group not exist, {req.group}")
        now = self.clock.now_ms()
        self.revive_due(now)
        out: list[PoppedMessage] = []
        for stored in stored_topics:
            self._pop_fifo(dataclasses.replace(req, topic=stored), 0, now, out)
            if len(out) >= req.max_msgs:
                break
        if not out:
            return PopResult(PopOutcome.NO_NEW_MESSAGE, remark="no new message")
        return PopResult(PopOutcome.FOUND, out)

    def _pop_queue(self, req: PopRequest, topic: str, qid: int, now: int, out: list, selector=None) -> None:
        store = self.store
        key = (req.group, topic, qid)
        state = self._state(key)
        end = store.max_offset(topic, qid)
        while state.next_offset < end and len(out) < req.max_msgs:
            offset = state.next_offset
            state.next_offset += 1
            rec = store.record_at(topic, qid, offset)
            if rec is None or (req.tags is not None and rec.properties.get(Prop.TAGS) not in req.tags) \
                    or (selector is not None and not selector.matches(rec.properties)):
                continue                # gone, or not subscribed: acked away silently
            original = rec.properties.get(Prop.RETRY_TOPIC, req.topic) if topic != req.topic else req.topic
            out.append(self._deliver(key, state, offset, rec, original, rec.reconsume_times + 1, qid, now,
                                     req.invisible_ms, req.renew_for, req.client))
        self._commit(key, state)

    def _pop_fifo(self, req: PopRequest, qid: int, now: int, out: list, selector=None) -> None:
        """In queue order, the first not-done message of each message group
        (__SHARDINGKEY) that is not in flight. A message without a group waits for no
        other and holds none back (it is its own group): only the message group of a
        message in flight waits, as a FIFO group reading normal and delay topics
        expects. (Upstream's order pop blocks the whole queue instead.)"""
        store = self.store
        key = (req.group, req.topic, qid)
        state = self._state(key, fifo=True)
        end = min(store.max_offset(req.topic, qid), state.next_offset + _FIFO_SCAN)
        blocked: set[str] = set()
        for offset in range(state.next_offset, end):
            if len(out) >= req.max_msgs:
                break
            if offset in state.done:
                continue
            rec = store.record_at(req.topic, qid, offset)
            if rec is None:
                state.finish(offset)            # gone from the store
                continue
            group = rec.properties.get(SHARDING_KEY)
            if offset in state.in_flight or (group is not None and group in blocked):
                if group is not None:
                    blocked.add(group)
                continue
            if (req.tags is not None and rec.properties.get(Prop.TAGS) not in req.tags) \
                    or (selector is not None and not selector.matches(rec.properties)):
                state.finish(offset)            # not subscribed: acked away
                continue
            if group is not None:
                blocked.add(group)
            n = state.deliveries.get(offset, 0) + 1
            state.deliveries[offset] = n
            out.append(self._deliver(key, state, offset, rec, req.topic, rec.reconsume_times + n, qid, now,
                                     req.invisible_ms, req.renew_for, req.client))
        self._commit(key, state)

    def _deliver(self, key, state: _QueueState, offset: int, rec, topic: str, attempt: int, qid: int,
                 now: int, invisible_ms: int, owner: str = "", client: str = "") -> PoppedMessage:
        self._generation += 1
        visible_at = now + invisible_ms
        if self.deliveries is not None:
            self.deliveries.one(now, POP, key[0], key[1], qid, offset, attempt, client or owner, visible_at)
        state.in_flight[offset] = _Delivery(self._generation, visible_at, owner, now + RENEW_FOR_MS if owner else 0)
        if owner:
            self._renewed.setdefault(owner, set()).add((key, offset))
        heapq.heappush(self._expiry, (visible_at, self._generation, key, offset))
        return PoppedMessage(rec, topic, self._handle(key, offset, self._generation, visible_at), attempt, qid, offset)

    # -- ack / change invisible time ------------------------------------------------------------
    def ack(self, group: str, topic: str, receipt_handle: str) -> AckOutcome:
        found = self._delivery(group, topic, receipt_handle)
        if found.__class__ is AckOutcome:
            return found
        key, offset, state = found
        self._tell(ACK, key, offset)
        self._unown(key, state, offset)
        state.finish(offset)
        self._commit(key, state)
        return AckOutcome.ACKED

    def change_invisible_time(self, group: str, topic: str, receipt_handle: str,
                              invisible_ms: int) -> ChangeInvisibleResult:
        if not 0 <= invisible_ms <= MAX_INVISIBLE_MS:
            return ChangeInvisibleResult(InvisibleOutcome.ILLEGAL_INVISIBLE_TIME,
                                         remark=f"invisible time must be 0..{MAX_INVISIBLE_MS} ms, got {invisible_ms}")
        found = self._delivery(group, topic, receipt_handle)
        if found.__class__ is AckOutcome:
            return ChangeInvisibleResult(InvisibleOutcome.INVALID_RECEIPT_HANDLE, remark=_why(found))
        key, offset, state = found
        self._unown(key, state, offset)     # (a client's own invisible time ends the renewals)
        self._generation += 1
        now = self.clock.now_ms()
        visible_at = now + invisible_ms
        state.in_flight[offset] = _Delivery(self._generation, visible_at, nacked=invisible_ms == 0)
        heapq.heappush(self._expiry, (visible_at, self._generation, key, offset))
        handle = self._handle(key, offset, self._generation, visible_at)
        self._tell(NACK if invisible_ms == 0 else INVISIBLE, key, offset, visible_at)
        if invisible_ms == 0:
            # given back at once (the Node 5.x client's nack): revived now, as the broker's
            # revive does within its scan, not when the clock next moves
            self.revive_due(now)
        return ChangeInvisibleResult(InvisibleOutcome.CHANGED, handle)

    def _delivery(self, group: str, topic: str, handle: str):
        """(key, offset, state) of the delivery ``handle`` names, or why it cannot be used."""
        try:
            kind, qid, offset, generation, _ = handle.split(" ")
            qid, offset, generation = int(qid), int(offset), int(generation)
        except (AttributeError, ValueError):
            return AckOutcome.INVALID_RECEIPT_HANDLE
        stored = pop_retry_topic(group, topic) if kind == "r" else topic
        key = (group, stored, qid)
        state = self._queues.get(key)
        d = state.in_flight.get(offset) if state else None
        if d is not None and d.owner and d.visible_at <= self.clock.now_ms():
            self.revive_due(self.clock.now_ms())       # (renewed on time, even if the tick is late)
        if d is None or d.generation != generation:
            return AckOutcome.INVALID_RECEIPT_HANDLE
        if d.visible_at <= self.clock.now_ms():
            return AckOutcome.EXPIRED
        return key, offset, state

    # -- time -----------------------------------------------------------------------------------
    def next_deadline(self) -> int | None:
        """When the earliest delivery in flight becomes visible (stale entries included:
        an early tick finds nothing and costs little)."""
        return self._expiry[0][0] if self._expiry else None

    def revive_due(self, now: int) -> None:
        """Revive every delivery whose invisible time has ended (see the module docstring)."""
        expiry = self._expiry
        while expiry and expiry[0][0] <= now:
            visible_at, generation, key, offset = heapq.heappop(expiry)
            state = self._queues.get(key)
            d = state.in_flight.get(offset) if state else None
            if d is None or d.generation != generation or d.visible_at > now:
                continue                      # acked, its invisible time changed, or renewed
            if d.owner:
                self._renew(key, offset, d, now)
                continue
            if not d.nacked:
                self._tell(EXPIRED, key, offset)
            old = self._record(key, offset)
            decision = self._after_failure(key, state, offset, old) if old is not None else None
            if state.fifo and decision is not None and not decision.dead_letter:
                del state.in_flight[offset]   # visible again, in place: its group still waits for it
                if self.notify is not None:
                    self.notify(VisibleAgain(key[0], key[1]))
                continue
            if decision is not None and not self._store_copy(key, old, decision):
                heapq.heappush(expiry, (now + 1000, generation, key, offset))   # store refused: later
                d.visible_at = now + 1000
                return
            state.finish(offset)
            self._commit(key, state)

    def _renew(self, key, offset: int, d: _Delivery, now: int) -> None:
        """An auto-renewed delivery's invisible time ended: renewed for the next step while
        its client is there, up to 3 h; then nacked like a failure (the retry interval of
        its attempt; a FIFO group's fixed interval) and no longer renewed."""
        if now < d.renew_until:
            d.visible_at = min(now + RENEW_STEPS_MS[min(d.renewals, len(RENEW_STEPS_MS) - 1)], d.renew_until)
            d.renewals += 1
        else:
            self._forget_owner(key, offset, d)
            d.visible_at = now + self._nack_delay(key, offset)
        heapq.heappush(self._expiry, (d.visible_at, d.generation, key, offset))

    def _nack_delay(self, key, offset: int) -> int:
        """The retry interval of a delivery's attempt (0 when it is to be dead-lettered)."""
        state = self._queues[key]
        old = self._record(key, offset)
        decision = self._after_failure(key, state, offset, old) if old is not None else None
        return decision.delay_ms if decision is not None else 0

    def _unown(self, key, state: _QueueState, offset: int) -> None:
        d = state.in_flight.get(offset)
        if d is not None and d.owner:
            self._forget_owner(key, offset, d)

    def _forget_owner(self, key, offset: int, d: _Delivery) -> None:
        owned = self._renewed.get(d.owner)
        if owned is not None:
            owned.discard((key, offset))
            if not owned:
                del self._renewed[d.owner]
        d.owner = ""

    def release(self, client: str) -> int:
        """A client went away (NotifyClientTermination, its Telemetry stream ended): its
        auto-renewed deliveries stop being renewed and are visible again after 1 s.
        Returns how many it held."""
        owned = self._renewed.pop(client, set())
        now = self.clock.now_ms()
        for key, offset in owned:
            state = self._queues.get(key)
            d = state.in_flight.get(offset) if state else None
            if d is None or d.owner != client:
                continue
            d.owner = ""
            d.visible_at = min(d.visible_at, now + RELEASE_AFTER_MS)
            heapq.heappush(self._expiry, (d.visible_at, d.generation, key, offset))
        return len(owned)

    def forward_to_dlq(self, group: str, topic: str, receipt_handle: str) -> AckOutcome:
        """ForwardMessageToDeadLetterQueue: the delivery's message to %DLQ%<group> now,
        and the delivery done. Idempotent: the same handle again is ACKED."""
        found = self._delivery(group, topic, receipt_handle)
        if found.__class__ is AckOutcome:
            return AckOutcome.ACKED if receipt_handle in self._forwarded else found
        key, offset, state = found
        old = self._record(key, offset)
        if old is not None and not self._store_copy(key, old, self._after_failure(key, state, offset, old, True)):
            return AckOutcome.STORE_REFUSED
        self._unown(key, state, offset)
        state.finish(offset)
        self._commit(key, state)
        self._forwarded.append(receipt_handle)
        return AckOutcome.ACKED

    def _record(self, key: tuple[str, str, int], offset: int):
        return self.store.record_at(key[1], key[2], offset)

    def _after_failure(self, key: tuple[str, str, int], state: _QueueState, offset: int, old,
                       forward: bool = False) -> RetryDecision:
        """The retry lifecycle's decision for the delivery of ``old`` at ``offset``: its
        attempt is the record's reconsume times + 1, or for a FIFO delivery (failed in
        place) + its deliveries so far; the original topic is the retry copy's RETRY_TOPIC."""
        group, topic, _ = key
        original = old.properties.get(Prop.RETRY_TOPIC, topic) if topic.startswith(RETRY_PREFIX) else topic
        attempt = old.reconsume_times + (state.deliveries.get(offset, 1) if state.fifo else 1)
        gc = self.groups.find(group)
        return rocketmq5_after_failure(group, original, attempt,
                                       gc.retry_max_times if gc is not None else DEFAULT_MAX_RECONSUME_TIMES,
                                       fifo=state.fifo, properties=old.properties, offset_msg_id=old.offset_msg_id,
                                       force_dead_letter=forward)

    def _store_copy(self, key: tuple[str, str, int], old, decision: RetryDecision) -> bool:
        """Store the retry or dead-letter copy of ``old`` the lifecycle decided; False
        when the store refused it."""
        self.topics.create_system(decision.topic, 1, PERM_READ | PERM_WRITE)
        rec = MessageRecord(decision.topic, old.body, decision.queue_id, old.flag, decision.properties, old.sys_flag,
                            old.born_timestamp, old.born_host, 0, old.store_host, decision.attempt)
        res = self.put_message(rec, DEAD_LETTERED if decision.dead_letter else SENT, key[0])
        return res.status is PutStatus.PUT_OK

    def _tell(self, kind: str, key: tuple[str, str, int], offset: int, extra=None) -> None:
        if self.deliveries is not None:
            self.deliveries.one(self.clock.now_ms(), kind, key[0], key[1], key[2], offset, extra=extra)

    # -- state ------------------------------------------------------------------------------------
    def _state(self, key: tuple[str, str, int], fifo: bool = False) -> _QueueState:
        state = self._queues.get(key)
        if state is None:
            group, topic, qid = key
            start = self.offsets.committed(group, topic, qid)
            state = self._queues[key] = _QueueState(start if start is not None else 0, fifo=fifo)
        return state

    def _commit(self, key: tuple[str, str, int], state: _QueueState) -> None:
        group, topic, qid = key
        self.offsets.commit(group, topic, qid, state.committed())

    @staticmethod
    def _handle(key: tuple[str, str, int], offset: int, generation: int, visible_at: int) -> str:
        # "<t|r> <queue> <offset> <generation> <visible at>": t = the topic, r = its pop retry topic
        kind = "r" if key[1].startswith(RETRY_PREFIX) else "t"
        return f"{kind} {key[2]} {offset} {generation} {visible_at}"

    def groups_and_topics(self) -> set[tuple[str, str]]:
        """(group, topic) of every pop consumer seen since the start (the retry topics'
        queues counted as their topic's)."""
        out = set()
        for group, topic, _ in self._queues:
            retry = f"{RETRY_PREFIX}{group}{POP_RETRY_SEPARATOR}"
            out.add((group, topic[len(retry):] if topic.startswith(retry) else topic))
        return out

    def in_flight(self, group: str) -> list[tuple[str, int, int, bool]]:
        """``group``'s deliveries in flight: (stored topic, queue offset, when it is visible
        again in ms, whether it is auto-renewed for its client), in that order."""
        return sorted((topic, offset, d.visible_at, bool(d.owner))
                      for (g, topic, _), state in self._queues.items() if g == group
                      for offset, d in state.in_flight.items())

    def queue_states(self, group: str) -> list[dict]:
        """What the dashboard shows of ``group``'s pop queues (stored topic, queue id):
        the next offset never popped, the deliveries in flight (offset -> (visible at,
        auto-renewed)), FIFO, and a FIFO queue's deliveries so far per offset not done."""
        return [{"topic": topic, "queue_id": qid, "next_offset": s.next_offset, "fifo": s.fifo,
                 "in_flight": {o: (d.visible_at, bool(d.owner)) for o, d in s.in_flight.items()},
                 "deliveries": dict(s.deliveries)}
                for (g, topic, qid), s in sorted(self._queues.items()) if g == group]

    def in_flight_count(self, group: str | None = None) -> int:
        return sum(len(s.in_flight) for (g, _, _), s in self._queues.items() if group is None or g == group)

    def _check(self) -> None:
        """Every delivery in flight has a live expiry entry; committed offsets never pass
        a delivery still in flight."""
        live = {(key, off, gen) for _, gen, key, off in self._expiry}
        for key, state in self._queues.items():
            for off, d in state.in_flight.items():
                assert (key, off, d.generation) in live, f"delivery {key} {off} has no expiry"
                if state.fifo:
                    assert off >= state.next_offset and off not in state.done, f"FIFO delivery {key} {off} is done"
                else:
                    assert off < state.next_offset, f"in flight past the next offset: {key} {off}"
                if d.owner:
                    assert (key, off) in self._renewed.get(d.owner, ()), f"renewed delivery {key} {off} not indexed"
        for owner, owned in self._renewed.items():
            for key, off in owned:
                d = self._queues[key].in_flight.get(off) if key in self._queues else None
                assert d is not None and d.owner == owner, f"{owner} is indexed for {key} {off}, not renewed for it"
            assert all(o > state.next_offset for o in state.done), f"done below the next offset: {key}"
            assert self.store.query_offset(*key) <= state.committed(), f"committed past in-flight: {key}"


def _refusal(req: PopRequest) -> PopResult:
    """Why a pop's batch size or invisible time is refused."""
    if not 1 <= req.max_msgs <= 32:
        return PopResult(PopOutcome.ILLEGAL_ARGUMENT, remark=f"batch size must be 1..32, got {req.max_msgs}")
    if not 0 <= req.invisible_ms <= MAX_INVISIBLE_MS:
        return PopResult(PopOutcome.ILLEGAL_INVISIBLE_TIME,
                         remark=f"invisible time must be 0..{MAX_INVISIBLE_MS} ms, got {req.invisible_ms}")


def _why(outcome: AckOutcome) -> str:
    return "receipt handle is expired" if outcome is AckOutcome.EXPIRED else "receipt handle is not valid"
