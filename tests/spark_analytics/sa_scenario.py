"""A scripted run on a virtual clock with a known truth, stored by the real MessageStore.

The broker is the real ``broker.core.BrokerCore`` driven by RemotingCommands
(``CoreBroker``) when it is importable; otherwise ``MiniBroker``: the store plus the
delay and send-back rules written here from rocketmq-4x.md §5.2 / §6 (divert DELAY > 0
to SCHEDULE_TOPIC_XXXX with REAL_TOPIC / REAL_QID, re-store when due keeping the stored
properties string, RETRY_TOPIC once, ORIGIN_MESSAGE_ID = first copy's offsetMsgId,
reconsumeTimes + 1, DLQ at reconsumeTimes >= 16, level 3 + reconsumeTimes). A test
runs both and compares. The consumers are scripted here, and every fact the analyses
should find is written down as it happens (``Truth``) — never derived from the code
under test.

Scenario (times are virtual; T0 = 2024-01-01):
  orders   (4 queues)  40 messages + a producer re-send of #11 (same UNIQ_KEY) + 4 late
                       messages on queue 0 nobody consumes (the lag), consumed by "billing":
                       #i % 10 == 3 fail twice, #i % 10 == 7 fail once, #5 and #15 always
                       fail (16 retries, then the DLQ), the rest succeed at once.
  payments (2 queues)  12 messages + 2 sent with DELAY=2 (5 s) to queue 0, consumed by
                       "audit": all succeed, but the message at queue 1 offset 2 never
                       finishes, so audit's committed offset there stays at 2.
  The broker is down for 25 s once (no ticks), so some delayed copies come late.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from rocketmq_emulator.delay_scheduler import DelayScheduler, VirtualClock
from tests.support.delay import DEFAULT_MESSAGE_DELAY_LEVEL, levels_of
from rocketmq_emulator.store import MessageStore, PutStatus, StoreConfig
from rocketmq_emulator.store.records import MessageRecord, Prop, properties_to_string
from tests.support.remoting import front_of

GROUP_B, GROUP_A = "billing", "audit"
MAX_RECONSUME = 16
POISON = {5, 15}


def uniq(topic: str, i: int) -> str:
    return f"{'A' if topic == 'orders' else 'B'}{i:031X}"


def fails_needed(i: int) -> float:
    if i in POISON:
        return float("inf")
    return {3: 2, 7: 1}.get(i % 10, 0)


@dataclass
class Truth:
    produced: dict = field(default_factory=lambda: defaultdict(int))          # topic -> n
    send_backs: dict = field(default_factory=lambda: defaultdict(int))        # group -> records
    retries: dict = field(default_factory=lambda: defaultdict(int))           # (group, uniq) -> n
    dead: dict = field(default_factory=dict)                                   # (group, uniq) -> dlq store ms
    first_store: dict = field(default_factory=dict)                           # uniq -> first store ms
    lateness: list = field(default_factory=list)                              # (level, late ms)
    scheduled_pending: int = 0
    committed: dict = field(default_factory=dict)                             # (topic, group, qid) -> offset
    max_offset: dict = field(default_factory=dict)                            # (topic, qid) -> next offset
    succeeded: dict = field(default_factory=lambda: defaultdict(int))         # group -> originals
    duplicates: set = field(default_factory=set)                              # (group, uniq)
    pinning: dict = field(default_factory=dict)                               # (group, topic, qid) -> uniq
    records_at_snapshot: int = 0
    funnel: dict = field(default_factory=lambda: defaultdict(int))            # (group, attempt) -> delivered


SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"


class MiniBroker:
    """The store plus the delay rules (§6.2 divert, §6.3 messageTimeup) and the
    send-back (§5.2), driven by a VirtualClock."""

    def __init__(self, root: Path, clock: VirtualClock, segment_size: int = 12 << 10) -> None:
        self.clock = clock
        self.levels = levels_of(DEFAULT_MESSAGE_DELAY_LEVEL)
        self.store = MessageStore(root, StoreConfig(segment_size=segment_size))
        self.scheduler = DelayScheduler(self.levels)

    def put(self, rec: MessageRecord):
        level = 0
        raw = rec.properties.get(Prop.DELAY)
        if raw and raw.lstrip("-").isdigit() and int(raw) > 0:
            level = min(int(raw), self.levels.max_level)
            rec.properties[Prop.DELAY] = str(level)
            rec.properties[Prop.REAL_TOPIC] = rec.topic
            rec.properties[Prop.REAL_QID] = str(rec.queue_id)
            rec.properties_text = properties_to_string(rec.properties)
            rec.topic, rec.queue_id = SCHEDULE_TOPIC, level - 1
        res = self.store.put(rec, self.clock.now_ms())
        assert res.status is PutStatus.PUT_OK, res
        if level:
            self.scheduler.add(level, res.queue_offset, self.levels.deliver_timestamp(level, res.store_timestamp))
        return res

    def _time_up(self, level: int, offset: int) -> MessageRecord:
        phys = self.store.queue_entry(SCHEDULE_TOPIC, level - 1, offset)[0]
        old = self.store.look_message_by_offset(phys)
        props = dict(old.properties)
        props.pop(Prop.DELAY, None)
        props[Prop.WAIT] = "false"
        return MessageRecord(topic=props[Prop.REAL_TOPIC], body=old.body, queue_id=int(props[Prop.REAL_QID]),
                             flag=old.flag, properties=props, sys_flag=old.sys_flag,
                             born_timestamp=old.born_timestamp, born_host=old.born_host, store_host=old.store_host,
                             reconsume_times=old.reconsume_times,
                             properties_text=old.properties_text)   # still shows DELAY / REAL_TOPIC / REAL_QID

    def send(self, topic: str, qid: int, i: int, props: dict | None = None):
        p = {Prop.UNIQ_KEY: uniq(topic, i), Prop.KEYS: f"{topic}-{i}", Prop.TAGS: "TagA", "CLUSTER": "DefaultCluster"}
        p.update(props or {})
        return self.put(MessageRecord(topic=topic, body=f"{topic} #{i}".encode(), queue_id=qid, properties=p,
                                      born_timestamp=self.clock.now_ms(), store_host=("127.0.0.1", 10911)))

    def send_back(self, group: str, phys: int):
        old = self.store.look_message_by_offset(phys)
        props = dict(old.properties)
        props.setdefault(Prop.RETRY_TOPIC, old.topic)
        props[Prop.WAIT] = "false"
        dlq = old.reconsume_times >= MAX_RECONSUME
        if dlq:
            topic, props[Prop.DELAY] = f"%DLQ%{group}", "0"
        else:
            topic, props[Prop.DELAY] = f"%RETRY%{group}", str(3 + old.reconsume_times)
        props.setdefault(Prop.ORIGIN_MESSAGE_ID, old.offset_msg_id)
        rec = MessageRecord(topic=topic, body=old.body, queue_id=0, flag=old.flag, properties=props,
                            sys_flag=old.sys_flag, born_timestamp=old.born_timestamp, born_host=old.born_host,
                            store_host=old.store_host, reconsume_times=old.reconsume_times + 1)
        return self.put(rec), dlq

    def tick(self) -> list[MessageRecord]:
        """Re-store everything due now (the broker's _deliver_due)."""
        out = []
        for level, offset, due in self.scheduler.due(self.clock.now_ms()):
            rec = self._time_up(level, offset)
            res = self.put(rec)
            self.scheduler.delivered(level, offset)
            out.append((rec, level, due, res))
        self.store.set_delay_offsets(self.scheduler.offsets())
        return out

    def next_deadline(self):
        return self.scheduler.next_deadline(self.clock.now_ms())

    def commit(self, group: str, topic: str, qid: int, offset: int) -> None:
        self.store.commit_offset(group, topic, qid, offset)

    def flush(self) -> None:
        self.store.flush()

    def close(self) -> None:
        self.store.close()


class _Put:
    """What the scenario needs to know about a stored record."""

    def __init__(self, queue_offset: int, commit_log_offset: int, store_timestamp: int) -> None:
        self.queue_offset, self.commit_log_offset, self.store_timestamp = queue_offset, commit_log_offset, store_timestamp


class CoreBroker:
    """The same driver interface on the real ``broker.core.BrokerCore``: requests go in as
    RemotingCommands (SEND_MESSAGE, CONSUMER_SEND_MSG_BACK, UPDATE_CONSUMER_OFFSET), time
    moves by ``tick`` at the core's deadlines, and what was stored is read back from the
    core's event log."""

    def __init__(self, root: Path, clock: VirtualClock, segment_size: int = 12 << 10) -> None:
        from rocketmq_emulator.broker.config import BrokerConfig
        from rocketmq_emulator.broker.core import BrokerCore
        from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode

        self._cmd, self._code = RemotingCommand, RequestCode
        self.clock = clock
        cfg = BrokerConfig()
        cfg.maped_file_size_commit_log = segment_size
        self.core = BrokerCore.open(root, clock, cfg)
        self.store = self.core.store
        self.levels = self.core.levels
        self.ch = self.core.connect("127.0.0.1:50001")
        self._seen = 0
        for g in (GROUP_A, GROUP_B):                     # what a consumer's first heartbeat does
            self.core.groups.find(g)

    def _new_events(self):
        ev = list(self.core.events)
        out, self._seen = ev[self._seen:], len(ev)
        return out

    def _ok(self, reply):
        assert reply is not None and reply.code == 0, (reply.code, reply.remark)
        return reply

    def send(self, topic: str, qid: int, i: int, props: dict | None = None):
        from rocketmq_emulator.store.records import properties_to_string

        p = {Prop.UNIQ_KEY: uniq(topic, i), Prop.KEYS: f"{topic}-{i}", Prop.TAGS: "TagA"}
        p.update(props or {})
        self._new_events()
        self._ok(front_of(self.core).handle(self._cmd.request(self._code.SEND_MESSAGE, {
            "producerGroup": "producers", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": 4,
            "queueId": qid, "sysFlag": 0, "bornTimestamp": self.clock.now_ms(), "flag": 0,
            "properties": properties_to_string(p), "reconsumeTimes": 0, "unitMode": "false"},
            f"{topic} #{i}".encode()), self.ch))
        [e] = [e for e in self._new_events() if e.kind in ("stored", "delayed")]
        return _Put(e.queue_offset, e.commit_log_offset, e.time_ms)

    def send_back(self, group: str, phys: int):
        old = self.store.look_message_by_offset(phys)
        self._new_events()
        self._ok(front_of(self.core).handle(self._cmd.request(self._code.CONSUMER_SEND_MSG_BACK, {
            "offset": phys, "group": group, "delayLevel": 0, "originMsgId": old.msg_id,
            "originTopic": old.properties.get(Prop.RETRY_TOPIC, old.topic), "unitMode": "false",
            "maxReconsumeTimes": MAX_RECONSUME}), self.ch))
        [e] = [e for e in self._new_events() if e.kind in ("delayed", "dead_lettered")]
        return _Put(e.queue_offset, e.commit_log_offset, e.time_ms), e.kind == "dead_lettered"

    def commit(self, group: str, topic: str, qid: int, offset: int) -> None:
        self._ok(front_of(self.core).handle(self._cmd.request(self._code.UPDATE_CONSUMER_OFFSET, {
            "consumerGroup": group, "topic": topic, "queueId": qid, "commitOffset": offset}), self.ch))

    def tick(self):
        self.core.tick()
        out = []
        for e in self._new_events():
            if e.kind != "redelivered":
                continue
            rec = self.store.look_message_by_offset(e.commit_log_offset)
            level = int(rec.properties[Prop.DELAY])              # the stored string keeps DELAY
            sched = self.store.look_message_by_offset(self._schedule_phys(rec))
            due = self.levels.deliver_timestamp(level, sched.store_timestamp)
            out.append((rec, level, due, _Put(e.queue_offset, e.commit_log_offset, e.time_ms)))
        return out

    def _schedule_phys(self, rec) -> int:
        """The SCHEDULE_TOPIC_XXXX record this copy came from: the scheduler delivers
        each level in queue order, so it is the next undelivered entry of its level."""
        level = int(rec.properties[Prop.DELAY])
        self._next = getattr(self, "_next", {})
        off = self._next.get(level, 0)
        self._next[level] = off + 1
        return self.store.queue_entry("SCHEDULE_TOPIC_XXXX", level - 1, off)[0]

    def next_deadline(self):
        return self.core.schedule.scheduler.next_deadline(self.clock.now_ms())

    def flush(self) -> None:
        self.core.flush()

    def close(self) -> None:
        self.core.close()


def make_broker(root: Path, clock: VirtualClock):
    """The real broker core when it is importable, else the store-level driver."""
    try:
        import rocketmq_emulator.broker.core  # noqa: F401
    except Exception:          # not landed yet (or mid-edit): the store-level driver
        return MiniBroker(root, clock)
    return CoreBroker(root, clock)


def run(root: Path, snapshot_dir: Path | None = None, take_snapshot=None, driver=make_broker) -> Truth:
    """Run the scenario into a store at ``root``; if ``take_snapshot`` is given, call it
    as take_snapshot(root, snapshot_dir) while the store is open, then keep writing."""
    clock = VirtualClock()
    b = driver(root, clock)
    t = Truth()
    queue = defaultdict(list)          # (topic, group, qid) -> [(queue_offset, uniq, attempt, phys)]
    done = defaultdict(set)            # (topic, group, qid) -> acked queue offsets
    stuck = {("payments", GROUP_A, 1, 2)}

    def stored(topic, qid, res, u, attempt, groups):
        t.max_offset[(topic, qid)] = res.queue_offset + 1
        for g in groups:
            queue[(topic, g, qid)].append((res.queue_offset, u, attempt, res.commit_log_offset))
            t.funnel[(g, attempt)] += 1

    for i in range(40):
        res = b.send("orders", i % 4, i)
        t.produced["orders"] += 1
        t.first_store[uniq("orders", i)] = res.store_timestamp
        stored("orders", i % 4, res, uniq("orders", i), 0, [GROUP_B])
        clock.advance(1)
        if i == 11:                                          # the producer re-sends #11
            res = b.send("orders", 3, 11)
            t.produced["orders"] += 1
            stored("orders", 3, res, uniq("orders", 11), 0, [GROUP_B])
            t.duplicates.add((GROUP_B, uniq("orders", 11)))
            clock.advance(1)
    for i in range(12):
        res = b.send("payments", i % 2, i)
        t.produced["payments"] += 1
        stored("payments", i % 2, res, uniq("payments", i), 0, [GROUP_A])
        clock.advance(1)
    for i in (100, 101):                                     # delayed business messages
        b.send("payments", 0, i, {Prop.DELAY: "2"})
        t.produced["payments"] += 1
        clock.advance(1)

    attempts = defaultdict(int)                              # uniq -> failures so far (billing)

    def consume():
        for (topic, group, qid), items in list(queue.items()):
            for qoff, u, attempt, phys in items:
                if qoff in done[(topic, group, qid)]:
                    continue
                if (topic, group, qid, qoff) in stuck:
                    continue
                i = int(u[1:], 16)
                if group == GROUP_B and attempts[u] < fails_needed(i):
                    attempts[u] += 1
                    res, dlq = b.send_back(group, phys)
                    t.send_backs[group] += 1
                    if dlq:
                        t.dead[(group, u)] = res.store_timestamp
                        t.max_offset[(f"%DLQ%{group}", 0)] = res.queue_offset + 1
                    else:
                        t.retries[(group, u)] += 1
                done[(topic, group, qid)].add(qoff)
            # ProcessQueue minimum-offset commit: the lowest offset not yet acknowledged
            acked = done[(topic, group, qid)]
            nxt = 0
            while nxt in acked:
                nxt += 1
            b.commit(group, topic, qid, nxt)
            t.committed[(topic, group, qid)] = nxt

    consume()
    clock.advance(25_000)                                    # the broker is down: no ticks for 25 s
    while True:
        for rec, level, due, res in b.tick():
            t.lateness.append((level, res.store_timestamp - due))
            res_q, phys = res.queue_offset, res.commit_log_offset
            if rec.topic.startswith("%RETRY%"):
                group = rec.topic[len("%RETRY%"):]
                queue[(rec.topic, group, rec.queue_id)].append((res_q, rec.properties[Prop.UNIQ_KEY],
                                                                rec.reconsume_times, phys))
                t.funnel[(group, rec.reconsume_times)] += 1
                t.max_offset[(rec.topic, rec.queue_id)] = res_q + 1
            else:                                            # a delayed business message, now due
                queue[(rec.topic, GROUP_A, rec.queue_id)].append((res_q, rec.properties[Prop.UNIQ_KEY], 0, phys))
                t.funnel[(GROUP_A, 0)] += 1
                t.max_offset[(rec.topic, rec.queue_id)] = res_q + 1
        consume()
        d = b.next_deadline()
        if d is None:
            break
        clock.advance_to(d)

    for i in range(40, 44):                                  # produced after the consumers stopped
        res = b.send("orders", 0, i)
        t.produced["orders"] += 1
        stored("orders", 0, res, uniq("orders", i), 0, [GROUP_B])
        clock.advance(1)
    t.pinning[(GROUP_B, "orders", 0)] = uniq("orders", 40)
    t.pinning[(GROUP_A, "payments", 1)] = next(u for qoff, u, _, _ in queue[("payments", GROUP_A, 1)] if qoff == 2)
    for (topic, group, qid), items in queue.items():
        for qoff, u, attempt, _ in items:
            if attempt == 0 and qoff < t.committed.get((topic, group, qid), 0) and (group, u) not in t.dead:
                t.succeeded[group] += 1
    b.flush()
    t.records_at_snapshot = sum(1 for _ in _all_records(root))
    if take_snapshot is not None:
        take_snapshot(root, snapshot_dir)                    # the store is open: a live snapshot
        for i in range(200, 230):                            # ... and keeps being written
            b.send("payments", 1, i)
            clock.advance(1)
        b.commit(GROUP_A, "payments", 1, 20)
        b.flush()
    b.close()
    return t


def _all_records(root: Path):
    from rocketmq_emulator.spark_analytics.commitlog import list_segments, open_segment, scan_buffer

    for seg in list_segments(root / "commitlog"):
        b, mv = open_segment(seg.path)
        yield from scan_buffer(b, mv, seg.base).starts.tolist()
