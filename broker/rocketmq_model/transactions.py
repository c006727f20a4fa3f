"""Transactional messages on the core: half messages, their end, and the check-back ladder
(RocketMQ 4.x TransactionMQProducer, 5.x Producer with a TransactionChecker; upstream's
TransactionalMessageBridge, EndTransactionProcessor, TransactionalMessageCheckService).

Theory of operation. A send with TRAN_MSG=true is not stored in its topic: it becomes a
*half message* in RMQ_SYS_TRANS_HALF_TOPIC queue 0, with REAL_TOPIC / REAL_QID naming
where it belongs and its transaction bits cleared, so no consumer of its topic sees it.
The producer then ends it (EndTransaction): COMMIT stores the message in its topic (its
properties kept but REAL_TOPIC, REAL_QID and TRAN_MSG; sysFlag COMMIT) and ROLLBACK drops
it; either way an op record (tag "d", body: the half's first queue offset) in
RMQ_SYS_TRANS_OP_HALF_TOPIC says it is resolved. UNKNOWN leaves it waiting.

A half message left waiting is checked back with its producer group (any connected
producer of it; a 5.x producer's group is its topic, as the proxy names it) on the
broker's clock, as the retry lifecycle decides (retry_lifecycle.transaction_check):
``transactionTimeOut`` after it was stored, then every ``transactionCheckInterval``;
each check first stores a copy of it in the half topic with TRANSACTION_CHECK_TIMES + 1
and TRAN_PREPARED_QUEUE_OFFSET = the first copy's queue offset — counted whether or not
a producer is there to ask, as upstream counts it — and after ``transactionCheckMax``
checks it is discarded into TRANS_CHECK_MAX_TIME_TOPIC (with an op record, so a restart
does not bring it back). ``clock advance`` moves the ladder like every other one.

The commit log is the truth: at start the waiting half messages are read back from the
half topic (the latest copy of each, less those the op topic resolves), and their next
check is due where the store times put it. A producer's END for a transaction id no half
message waits for (already ended, discarded, never sent) is NOT_FOUND.
"""
from __future__ import annotations

import heapq
import logging
from dataclasses import dataclass, replace

from rocketmq_emulator.store import PutStatus
from rocketmq_emulator.store.records import (TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC, MessageRecord, Prop, SysFlag,
                                             create_offset_msg_id, properties_to_string)

from ..config import PERM_READ, PERM_WRITE
from ..notifications import TransactionCheck
from ..operations import EndOutcome, EndTransaction, EndTransactionResult, HalfMessage, Resolution
from ..put_kinds import AS_IS
from ..retry_lifecycle import transaction_check, transaction_first_check_ms

__all__ = ["TransactionService", "OP_REMOVE_TAG"]

log = logging.getLogger("broker.transactions")

OP_REMOVE_TAG = "d"                 # TransactionalMessageUtil.REMOVE_TAG
_RETRY_STORE_MS = 1000              # a copy the store refused is tried again this much later
_RW = PERM_READ | PERM_WRITE


@dataclass(slots=True)
class _Half:
    first_offset: int           # the first copy's half-queue offset: the op record names it
    transaction_id: str
    topic: str
    queue_id: int               # in its topic
    group: str
    stored_ms: int              # when the first copy was stored
    queue_offset: int           # the latest copy's (a check stores a new one)
    commit_log_offset: int
    checks: int
    due_ms: int                 # the next check, or the discard after the last one
    body_size: int


class TransactionService:
    def __init__(self, store, clock, config, topics, put_message, notify, producers, store_host) -> None:
        """``put_message``: the core's one put path; ``producers``: the core's producer
        table (group -> {channel: client id}), where checks find their producer;
        ``store_host``: this broker's address, the op records' born and store host."""
        self.store = store
        self.store_host = store_host
        self.clock = clock
        self.config = config
        self.topics = topics
        self.put_message = put_message
        self.notify = notify
        self.producers = producers
        self._pending: dict[int, _Half] = {}            # first offset -> the half message
        self._by_id: dict[str, int] = {}                # transaction id -> first offset
        self._by_copy: dict[int, int] = {}              # commit-log offset of each copy -> first offset
        # (due ms, first offset, checks then): the check-back heap; empty when no half
        # message waits, so the core skips the service (no call per tick)
        self.due: list[tuple[int, int, int]] = []
        self._store_failing = False
        self._recover()

    # -- half messages ---------------------------------------------------------------------
    def prepare(self, rec: MessageRecord):
        """Store ``rec`` (a send to its topic and queue, TRAN_MSG=true) as a half message;
        returns the store's PutResult (the half copy's offsets: what the producer is told)."""
        props = rec.properties
        uniq = props.get(Prop.UNIQ_KEY)
        if uniq:
            props[Prop.TRANSACTION_ID] = uniq
        props[Prop.REAL_TOPIC] = rec.topic
        props[Prop.REAL_QID] = str(rec.queue_id)
        rec.topic = TRANS_HALF_TOPIC
        rec.queue_id = 0
        rec.sys_flag &= ~SysFlag.TRANSACTION_MASK
        rec.properties_text = properties_to_string(props, skip=Prop.WAIT)
        self.topics.create_system(TRANS_HALF_TOPIC, 1, _RW)
        res = self.put_message(rec, AS_IS)
        if res.status is PutStatus.PUT_OK:
            first = transaction_first_check_ms(props, self.config.transaction_timeout)
            self._track(_Half(res.queue_offset, uniq or res.msg_id, props[Prop.REAL_TOPIC],
                              int(props[Prop.REAL_QID]), props.get(Prop.PGROUP, ""), res.store_timestamp, res.queue_offset,
                              res.commit_log_offset, 0, res.store_timestamp + first, len(rec.body)))
        return res

    def end(self, req: EndTransaction) -> EndTransactionResult:
        """A producer commits, rolls back, or does not know yet (UNKNOWN: nothing changes)."""
        first = self._by_id.get(req.transaction_id)
        if first is None and req.commit_log_offset is not None:
            first = self._by_copy.get(req.commit_log_offset)
        half = self._pending.get(first) if first is not None else None
        if half is None:
            return EndTransactionResult(EndOutcome.NOT_FOUND, f"no half message waits for transaction "
                                                              f"{req.transaction_id} (it was ended or discarded "
                                                              f"already, or never sent)")
        if req.producer_group and half.group and req.producer_group != half.group:
            return EndTransactionResult(EndOutcome.GROUP_MISMATCH, f"The producer group wrong: transaction "
                                                                   f"{req.transaction_id} is {half.group}'s, not "
                                                                   f"{req.producer_group}'s")
        if req.resolution is Resolution.UNKNOWN:
            return EndTransactionResult(EndOutcome.LEFT_WAITING)
        result = EndTransactionResult(EndOutcome.ROLLED_BACK)
        if req.resolution is Resolution.COMMIT:
            rec = self.store.look_message_by_offset(half.commit_log_offset)
            if rec is None:
                return EndTransactionResult(EndOutcome.NOT_FOUND, f"the half message of transaction "
                                                                  f"{req.transaction_id} is gone from the store")
            final = _committed(rec, half.commit_log_offset)
            res = self.put_message(final)
            if res.status is not PutStatus.PUT_OK:
                return EndTransactionResult(EndOutcome.STORE_REFUSED, res.remark or res.status.name)
            result = EndTransactionResult(EndOutcome.COMMITTED, None, res.msg_id, final.queue_id, res.queue_offset)
        self._resolve(half)
        return result

    # -- the check-back ladder ---------------------------------------------------------------
    def next_deadline(self) -> int | None:
        """When the next check (or discard) is due (entries of half messages ended since
        are dropped on the way: `clock advance next` goes to a real one)."""
        due, pending = self.due, self._pending
        while due:
            at, first, checks = due[0]
            half = pending.get(first)
            if half is not None and half.checks == checks and half.due_ms == at:
                return at
            heapq.heappop(due)
        return None

    def tick(self, now: int) -> None:
        """Check back (or discard) every half message whose time has come."""
        due = self.due
        while due and due[0][0] <= now:
            at, first, checks = heapq.heappop(due)
            half = self._pending.get(first)
            if half is None or half.checks != checks or half.due_ms != at:
                continue                        # resolved, or already checked again
            if not self._check(half, now):
                return                          # the store refuses: everything waits for the retry

    def _check(self, half: _Half, now: int) -> bool:
        rec = self.store.look_message_by_offset(half.commit_log_offset)
        if rec is None:                         # (the store lost it: nothing to check or discard)
            log.warning("half message of transaction %s is gone from the store; forgotten", half.transaction_id)
            self._forget(half)
            return True
        c = self.config
        decision = transaction_check(rec.properties, half.first_offset, check_max=c.transaction_check_max,
                                     interval_ms=c.transaction_check_interval)
        copy = MessageRecord(decision.topic, rec.body, 0, rec.flag, decision.properties, rec.sys_flag,
                             rec.born_timestamp, rec.born_host, 0, rec.store_host, rec.reconsume_times)
        if decision.dead_letter:
            self.topics.create_system(decision.topic, 1, _RW)
        res = self.put_message(copy, AS_IS)
        if res.status is not PutStatus.PUT_OK:
            if not self._store_failing:
                log.warning("a transaction check-back could not store its copy (%s: %s); retrying every %d ms",
                            res.status.name, res.remark, _RETRY_STORE_MS)
                self._store_failing = True
            half.due_ms = now + _RETRY_STORE_MS
            heapq.heappush(self.due, (half.due_ms, half.first_offset, half.checks))
            return False
        self._store_failing = False
        if decision.dead_letter:
            log.info("transaction %s of %s was checked %d times without an answer: discarded into %s",
                     half.transaction_id, half.group, half.checks, decision.topic)
            self._resolve(half)
            return True
        half.checks = decision.attempt
        half.queue_offset, half.commit_log_offset = res.queue_offset, res.commit_log_offset
        self._by_copy[res.commit_log_offset] = half.first_offset
        half.due_ms = now + decision.delay_ms
        heapq.heappush(self.due, (half.due_ms, half.first_offset, half.checks))
        channel = self._producer_channel(half.group)
        if channel is not None:
            shown = replace(copy, topic=half.topic, queue_id=half.queue_id)
            self.notify(TransactionCheck(channel, half.group, half.transaction_id, shown, res.queue_offset,
                                         res.commit_log_offset, create_offset_msg_id(rec.store_host,
                                                                                     res.commit_log_offset)))
        return True

    def _producer_channel(self, group: str):
        """A connected producer of ``group`` (upstream's getAvailableChannel): the first
        that registered and is still there."""
        for channel in self.producers.get(group, {}):
            if not channel.closed:
                return channel
        return None

    # -- views ---------------------------------------------------------------------------------
    def waiting(self, topic: str | None = None) -> list[HalfMessage]:
        """The half messages waiting (of ``topic`` only, when given), oldest first."""
        return sorted((HalfMessage(h.transaction_id, h.topic, h.queue_id, h.group, h.stored_ms, h.checks, h.due_ms,
                                   h.body_size)
                       for h in self._pending.values() if topic is None or h.topic == topic),
                      key=lambda m: (m.stored_ms, m.transaction_id))

    def waiting_count(self, topic: str | None = None) -> int:
        return sum(1 for h in self._pending.values() if topic is None or h.topic == topic)

    # -- state -----------------------------------------------------------------------------------
    def _track(self, half: _Half) -> None:
        self._pending[half.first_offset] = half
        self._by_id[half.transaction_id] = half.first_offset
        self._by_copy[half.commit_log_offset] = half.first_offset
        heapq.heappush(self.due, (half.due_ms, half.first_offset, half.checks))

    def _resolve(self, half: _Half) -> None:
        """Ended or discarded: recorded in the op topic, and forgotten."""
        now = self.clock.now_ms()
        host = self.store_host
        op = MessageRecord(TRANS_OP_HALF_TOPIC, str(half.first_offset).encode(), 0, 0, {Prop.TAGS: OP_REMOVE_TAG}, 0,
                           now, host, 0, host)
        self.topics.create_system(TRANS_OP_HALF_TOPIC, 1, _RW)
        res = self.put_message(op, AS_IS)
        if res.status is not PutStatus.PUT_OK:
            # in memory it is done; after a restart it would wait (and be checked) again
            log.warning("the op record of transaction %s could not be stored (%s: %s)", half.transaction_id,
                        res.status.name, res.remark)
        self._forget(half)

    def _forget(self, half: _Half) -> None:
        self._pending.pop(half.first_offset, None)
        if self._by_id.get(half.transaction_id) == half.first_offset:
            del self._by_id[half.transaction_id]
        for clo in [k for k, v in self._by_copy.items() if v == half.first_offset]:
            del self._by_copy[clo]

    def _recover(self) -> None:
        """The waiting half messages, read back from the half and op topics."""
        store = self.store
        lo, hi = store.min_offset(TRANS_HALF_TOPIC, 0), store.max_offset(TRANS_HALF_TOPIC, 0)
        if lo >= hi:
            return
        done = set()
        for off in range(store.min_offset(TRANS_OP_HALF_TOPIC, 0), store.max_offset(TRANS_OP_HALF_TOPIC, 0)):
            op = store.record_at(TRANS_OP_HALF_TOPIC, 0, off)
            if op is not None and op.properties.get(Prop.TAGS) == OP_REMOVE_TAG:
                done.update(int(x) for x in op.body.decode("ascii", "replace").split(",") if x.strip().isdigit())
        first_seen: dict[int, MessageRecord] = {}
        latest: dict[int, MessageRecord] = {}
        for off in range(lo, hi):
            rec = store.record_at(TRANS_HALF_TOPIC, 0, off)
            if rec is None:
                continue
            raw = rec.properties.get(Prop.TRAN_PREPARED_QUEUE_OFFSET, "")
            first = int(raw) if raw.isdigit() else off
            if first in done:
                continue
            first_seen.setdefault(first, rec)
            latest[first] = rec
        c = self.config
        for first, rec in latest.items():
            props = rec.properties
            raw = props.get(Prop.TRANSACTION_CHECK_TIMES, "")
            checks = int(raw) if raw.isdigit() else 0
            origin = first_seen[first]
            due = (origin.store_timestamp + transaction_first_check_ms(props, c.transaction_timeout) if checks == 0
                   else rec.store_timestamp + c.transaction_check_interval)
            qid = props.get(Prop.REAL_QID, "")
            self._track(_Half(first, props.get(Prop.UNIQ_KEY) or origin.offset_msg_id,
                              props.get(Prop.REAL_TOPIC, ""), int(qid) if qid.isdigit() else 0,
                              props.get(Prop.PGROUP, ""), origin.store_timestamp,
                              rec.queue_offset, rec.commit_log_offset, checks, due, len(rec.body)))

    def _check_invariants(self) -> None:
        live = {(at, first, checks) for at, first, checks in self.due}
        for first, half in self._pending.items():
            assert (half.due_ms, first, half.checks) in live, f"half message {half.transaction_id} has no due entry"
            assert self._by_copy.get(half.commit_log_offset) == first, f"{half.transaction_id}: copy not indexed"
        for tid, first in self._by_id.items():
            assert first in self._pending, f"transaction {tid} indexed but not waiting"


def _committed(half: MessageRecord, half_offset: int) -> MessageRecord:
    """The message a commit stores (EndTransactionProcessor#endMessageTransaction): in its
    real topic and queue, every property kept but REAL_TOPIC, REAL_QID and TRAN_MSG,
    sysFlag COMMIT, the half's commit-log offset as its prepared transaction offset."""
    props = dict(half.properties)
    topic = props.pop(Prop.REAL_TOPIC)
    raw_qid = props.pop(Prop.REAL_QID, "0")
    props.pop(Prop.TRAN_MSG, None)
    sys_flag = (half.sys_flag & ~SysFlag.TRANSACTION_MASK) | SysFlag.TRANSACTION_COMMIT
    rec = MessageRecord(topic, half.body, int(raw_qid) if raw_qid.isdigit() else 0, half.flag, props, sys_flag,
                        half.born_timestamp, half.born_host, 0, half.store_host, half.reconsume_times)
    rec.prepared_transaction_offset = half_offset
    return rec
