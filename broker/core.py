"""BrokerCore: the synchronous, sans-I/O RocketMQ 4.x broker (and name server).

Requests go in through ``handle``; replies come back from it, or later from
``take_outgoing`` (held long-poll pulls, broker→client notifications). Time comes only
from the injected Clock and randomness only from the injected ``random.Random``; the
core never sleeps, never starts a thread and never touches a socket, so a run is
reproducible from a seed and a test can jump the clock. Drivers — the asyncio TCP
adapter, the SDK's in-process transport, the simulator — call ``tick()`` at
``next_deadline()``. See CORE_API.md for the driver contract.
"""
from __future__ import annotations

import heapq
import itertools
import logging
import random
from functools import lru_cache
from typing import Callable

from rocketmq_emulator.delay_scheduler import TIMER_LANE, Clock, VirtualClock
from rocketmq_emulator.store import MessageStore, PutStatus, StoreConfig, StoreError
from rocketmq_emulator.store.records import PROP_CRC
from rocketmq_emulator.store.records import POP_RETRY_SEPARATOR, RETRY_PREFIX, MessageRecord, Prop, parse_host

from .config import PERM_READ, PERM_WRITE, BrokerConfig
from .rocketmq_model.config_writer import ConfigWriter
from .core_types import Channel, ConsumeMessageContext
from .views.delivery_log import DeliveryLog
from .dialects import check_pulsar_store_topic
from .events import Event, EventKind, EventLog
from .rocketmq_model.groups import ConsumerManager, GroupManager, LockManager
from .rocketmq_model import pulling, sending
from .kept_records import KeptRecords
from .rocketmq_model.long_polling import HeldPull, PullHoldService
from .rocketmq_model.offset_book import OffsetBook
from .views.rates import RateRing
from .rocketmq_model.invisible_time import PopService
from .pulsar_model.compaction import Compaction
from .pulsar_model.cursors import SubscriptionService
from .pulsar_model.producers import PulsarProducers
from .pulsar_model.topics import PulsarTopics
from .operations import (AckOutcome, BatchSendRequest, BrokerRoute, ChangeInvisibleResult, CommitOutcome,
                         EndTransaction, EndTransactionResult, OffsetCommit, PopRequest, PopResult, PullOutcome,
                         PullRequest, PullResult, QueueRoute, Registration,
                         SendBack, SendBackResult, SendRequest, SendResult, TopicRoute)
from .errors import RequestRefused
from .faults.rules import FaultSet
from .notifications import ConsumerIdsChanged, Notification, Notifier, PullReady
from .rocketmq_model.delay_queue import ScheduleService
from .rocketmq_model.transactions import TransactionService
from .rocketmq_model.topics import SCHEDULE_TOPIC, TIMER_TOPIC, TopicConfig, TopicManager, retry_topic

__all__ = ["BrokerCore", "Channel", "ConsumeMessageContext"]

log = logging.getLogger("broker")

# A failed re-store of a due delayed message is retried after this (DELAY_FOR_A_WHILE).
_SCHEDULE_RETRY_MS = 100
_STALE = object()           # the cached next deadline must be found again
_RETRY_LEN = len(RETRY_PREFIX)
_PUT_OK = PutStatus.PUT_OK
_FOUND = PullOutcome.FOUND
_CRC_NAME = PROP_CRC + "\x01"


class BrokerCore:
    def __init__(self, store: MessageStore, clock: Clock, config: BrokerConfig | None = None,
                 rng: random.Random | None = None, *, persistent: bool | None = None) -> None:
        self.store = store
        self.clock = clock
        self.config = config or BrokerConfig()
        self.rng = rng if rng is not None else random.Random(0)
        self.levels = self.config.delay_levels
        self.store_host = (self.config.broker_ip, self.config.listen_port)
        self.topics = TopicManager(self.config, store.load_config("topics"))
        self.groups = GroupManager(self.config, store.load_config("subscriptionGroup"))
        self.configs = ConfigWriter(store, (self.topics, self.groups), lambda: self._dirty(self.clock.now_ms()))
        self.consumers = ConsumerManager()
        self.producers: dict[str, dict[Channel, str]] = {}
        self.locks = LockManager(self.config.rebalance_lock_max_live_time)
        self.schedule = ScheduleService(self.levels, store)
        # every level's delivery offset in the store's table from the start (a delivery
        # then updates one: set_delay_offset)
        store.set_delay_offsets(self.schedule.scheduler.offsets())
        self.holds = PullHoldService()
        self.kept = KeptRecords()                           # records stored lately, as objects
        self._prop_crc = store.config.prop_crc
        # The next deadline of everything here but the Pulsar cursors (which keep their
        # own), found again only after something changed it: a put, a hold, a tick, a
        # pop... (the holds count their changes: ``holds.version``).
        self._deadline = _STALE
        self._deadline_free = _STALE                        # (the same without the held pulls)
        self._deadline_holds = -1
        self.events = EventLog()
        self.events.enabled = self.config.record_events
        self.notify = Notifier()                            # typed notifications to the fronts
        self._flush_due: int | None = None
        # what the dashboard reads beside the store: rates per second (rates.py) and the
        # deliveries the store cannot tell (delivery_log.py), both bounded
        self.rates = RateRing(topics=lambda: self.topics.table)
        self.deliveries = DeliveryLog(clock.now_ms(), store=store)
        self.offsets = OffsetBook(store, clock, self.events, self._dirty, self.rates, self.deliveries.first_pulled)
        self.pops = PopService(store, clock, self.rng, self.topics, self.groups, self.offsets, self.put_message,
                               self.deliveries)
        # Pulsar: topics and policies, compaction, cursors, producers (broker/pulsar_*.py)
        self.pulsar_topics = PulsarTopics(store, self.topics, self.notify, self._pulsar_defaults)
        first = self.pulsar_topics.first_offset
        self.compaction = Compaction(store, first, self._compaction_threshold)
        self.subscriptions = SubscriptionService(store, clock, self.config, self.topics, self.offsets, self.notify,
                                                 first, self.compaction, deliveries=self.deliveries,
                                                 rates=self.rates)
        self.pulsar_producers = PulsarProducers(
            store, lambda t: bool(self.pulsar_topics.effective(t, "deduplicationEnabled")), first,
            lambda t: self._compaction_threshold(t) > 0)
        self.pulsar_topics.policy_changed.append(self.pulsar_producers.refresh)
        # half messages and their check-back ladder (broker/rocketmq_model/transactions.py)
        self.transactions = TransactionService(store, clock, self.config, self.topics, self.put_message, self.notify,
                                               self.producers, self.store_host)
        # faults on demand (broker/faults/rules.py): rules the fronts ask at their one call into
        # the core; their random draws come from a source of their own, so a run without
        # rules draws nothing and gives the same bytes
        self.faults = FaultSet(clock, random.Random(0), self.events, self.config.broker_name)
        self._later: list[tuple[int, int, Callable[[], None]]] = []     # (due ms, seq, fn): call_later
        self._later_seq = itertools.count()
        self._hooks: list[Callable[[ConsumeMessageContext], None]] = []
        self._stored_hooks: list[Callable[[MessageRecord, str, dict | None], None]] = []
        self._channel_ids = itertools.count(1)
        self._persistent = persistent if persistent is not None else getattr(store, "root", None) is not None
        self._flush_error: str | None = None            # why the last flush failed (until one works)
        self._schedule_retry_at = 0
        self._schedule_failing = False                   # re-stores of due delayed messages fail
        self._closed = False
        # The name server this broker's name-server requests ask: itself, or the Cluster
        # it belongs to (broker/cluster.py), which sets this.
        self.names = self
        # A stopped cluster member answers only name-server and emulator requests (its
        # listener, when it has its own, is closed too: broker/cluster.py).
        self.stopped = False
        self.boot_ms = clock.now_ms()
        # Called at every flush, before the store's (serve keeps a virtual clock's time so).
        self.flush_hooks: list[Callable[[], None]] = [self.subscriptions.save, self.pulsar_producers.save]

    @classmethod
    def in_memory(cls, clock: Clock | None = None, config: BrokerConfig | None = None,
                  rng: random.Random | None = None) -> "BrokerCore":
        """A broker on the in-memory store (VirtualClock unless a clock is given)."""
        config = config or BrokerConfig()
        store = MessageStore(None, cls.store_config(config))
        return cls(store, clock or VirtualClock(), config, rng, persistent=False)

    @classmethod
    def open(cls, root, clock: Clock, config: BrokerConfig | None = None,
             rng: random.Random | None = None) -> "BrokerCore":
        """A broker on a disk store at ``root`` (created if missing, recovered if not)."""
        config = config or BrokerConfig()
        return cls(MessageStore(root, cls.store_config(config)), clock, config, rng, persistent=True)

    @staticmethod
    def store_config(config: BrokerConfig) -> StoreConfig:
        return StoreConfig(segment_size=config.maped_file_size_commit_log,
                           max_message_size=max(config.max_message_size, config.pulsar_max_message_size),
                           flush_disk_type=config.flush_disk_type,
                           delay_levels_ms=config.delay_levels.delays_ms, fsync=config.fsync)

    def draw_queue(self, queue_nums: int) -> int:
        """A queue among ``queue_nums``: ``rng.randrange(99999999) % queue_nums``, as the
        broker picks one (a send without a queue id, a send-back's retry queue). For a
        plain random.Random in one call: its randrange draws getrandbits(27) until below
        99999999, which is what this does."""
        rng = self.rng
        if rng.__class__ is random.Random:
            r = rng.getrandbits(27)
            while r >= 99999999:
                r = rng.getrandbits(27)
            return r % queue_nums
        return rng.randrange(99999999) % queue_nums

    # -- connections ---------------------------------------------------------------
    @property
    def addr(self) -> str:
        return self.config.addr

    def connect(self, remote: str = "127.0.0.1:0", owner=None) -> Channel:
        """A client connection; ``owner``: the front that serves it (its notifications
        go there)."""
        return Channel(next(self._channel_ids), remote, owner=owner)

    def disconnect(self, channel: Channel) -> None:
        """A connection closed: unregister its clients, drop its held pulls, notify."""
        channel.closed = True
        self.holds.drop_channel(channel)
        self._deadline = _STALE
        for group in self.consumers.channel_closed(channel):
            self.notify_consumer_ids_changed(group)
        for chans in self.producers.values():
            chans.pop(channel, None)

    # -- notifications ------------------------------------------------------------------
    def subscribe(self, fn: Callable[[Notification], None], kinds: tuple[type, ...]) -> Callable[[], None]:
        """``fn(notification)`` for each notification of ``kinds`` (broker/notifications.py:
        held pulls answered, consumer ids changed, something to dispatch to a Pulsar
        subscription); returns the function that stops it."""
        return self.notify.subscribe(fn, kinds)

    def notify_consumer_ids_changed(self, group: str, *, exclude: Channel | None = None) -> None:
        """Tell the group's other consumers to rebalance (ConsumerIdsChanged)."""
        gc = self.groups.table.get(group)
        if not self.config.notify_consumer_ids_changed_enable or (gc and not gc.notify_consumer_ids_changed_enable):
            return
        info = self.consumers.get(group)
        if info is None:
            return
        for ch in list(info.channels):
            if ch is not exclude and not ch.closed:
                self.notify(ConsumerIdsChanged(ch, group))

    # -- the one put path ------------------------------------------------------------
    def put_message(self, rec: MessageRecord, *, kind: str = EventKind.STORED, group: str | None = None,
                    delay_level: int | None = None, deliver_at_ms: int | None = None, waited_level: int = 0,
                    stored_map: bool = False, body_crc: int | None = None, now: int | None = None):
        """Store ``rec`` — delayed by ``delay_level``, or to ``deliver_at_ms``, or by its
        DELAY / TIMER_* properties when both are None (broker/rocketmq_model/delay_queue.py); a
        ``delay_level`` of 0 stores it as it is without looking — record the events,
        wake held pulls, keep the record (broker/kept_records.py). Returns the store's
        PutResult; ``rec`` is updated in place. ``kind`` SENT_BACK (a send-back's retry
        copy) records SENT_BACK beside DELAYED, with the one due time computed here;
        REDELIVERED records the level it waited at (``waited_level``). ``stored_map``:
        the caller vouches that ``rec.properties`` is what parsing the string it is
        stored with gives, but for the store's CRC property (a copy made from a kept
        record's map): it is completed with that and kept as the record's map as stored.
        ``body_crc``: the body's CRC when known (a copy of a kept record's body); ``now``:
        the clock's time when the caller just read it."""
        if now is None:
            now = self.clock.now_ms()
        lane = None if delay_level == 0 else self.schedule.divert(rec, now, delay_level, deliver_at_ms)
        res = self.store.put(rec, now, body_crc)
        if res[0] is not _PUT_OK:
            return res
        if self._flush_due is None and self._persistent:        # (_dirty, inlined: every put)
            self._flush_due = now + self.config.flush_interval_commit_log
        self._deadline = _STALE
        props = rec.properties
        if stored_map and self._prop_crc:
            text = rec.properties_text
            if text[-19:-10] == _CRC_NAME:
                props[PROP_CRC] = text[-10:]
            elif PROP_CRC in props:
                del props[PROP_CRC]
            kept = (rec, props)
        else:
            kept = None
        if self._stored_hooks:
            for fn in self._stored_hooks:
                fn(rec, res.msg_id, None if kept is None else props)
        if kind is not EventKind.REDELIVERED:          # (a delayed message come due was counted when sent)
            self.rates.stored(now, kind, rec.topic, props, group)
        if lane is not None:
            due = self.schedule.scheduled(lane, rec, res.queue_offset, res.store_timestamp, kept)
            if EventKind.DELAYED in self.events.wanted:
                self.events.append(Event(EventKind.DELAYED, now, rec.topic, rec.queue_id, res.queue_offset,
                                         res.commit_log_offset, props.get(Prop.UNIQ_KEY), group,
                                         rec.reconsume_times, lane, due, props.get(Prop.ORIGIN_MESSAGE_ID),
                                         props.get(Prop.REAL_TOPIC)))
            if kind is EventKind.SENT_BACK and EventKind.SENT_BACK in self.events.wanted:
                self.events.append(Event(EventKind.SENT_BACK, now, props[Prop.REAL_TOPIC], int(props[Prop.REAL_QID]),
                                         res.queue_offset, res.commit_log_offset, props.get(Prop.UNIQ_KEY), group,
                                         rec.reconsume_times, lane, due, props[Prop.ORIGIN_MESSAGE_ID],
                                         props[Prop.RETRY_TOPIC]))
            return res
        if rec.topic in self.subscriptions.topics:      # a Pulsar-style subscription reads it
            self.subscriptions.stored(rec.topic)
        if kind is EventKind.SENT_BACK:
            kind = EventKind.STORED         # (a send-back that is not delayed: a transaction half)
        if kind in self.events.wanted:
            self.events.append(Event(kind, now, rec.topic, rec.queue_id, res.queue_offset, res.commit_log_offset,
                                     props.get(Prop.UNIQ_KEY), group, rec.reconsume_times, waited_level, None,
                                     props.get(Prop.ORIGIN_MESSAGE_ID), props.get(Prop.RETRY_TOPIC)))
        self.kept.keep(rec, kept[1] if kept is not None else None)
        if self.holds._by_queue:
            data = self.store.last_put
            for held in self.holds.arrived(rec.topic, rec.queue_id, res.queue_offset, props):
                self._answer_arrived(held, res, data)
        return res

    # -- typed operations (broker/operations.py) ---------------------------------------
    def send(self, request: SendRequest, channel: Channel) -> SendResult:
        """Store one message (broker/rocketmq_model/sending.py)."""
        return sending.send(self, request, channel)

    def send_batch(self, request: BatchSendRequest, channel: Channel) -> SendResult:
        """Store a batch of one topic and queue (broker/rocketmq_model/sending.py)."""
        return sending.send_batch(self, request, channel)

    def send_back(self, request: SendBack) -> SendBackResult:
        """A consumer gives a stored message back: retried later or dead-lettered, as
        the retry lifecycle decides (broker/rocketmq_model/sending.py)."""
        return sending.send_back(self, request)

    def end_transaction(self, request: EndTransaction) -> EndTransactionResult:
        """A producer commits or rolls back a half message, or does not know yet
        (broker/rocketmq_model/transactions.py)."""
        return self.transactions.end(request)

    def pull(self, request: PullRequest, channel: Channel) -> PullResult:
        """Read a queue for a group (broker/rocketmq_model/pulling.py); commits ``commit_offset``."""
        return pulling.pull(self, request, channel)

    def pop(self, request: PopRequest) -> PopResult:
        """5.x receive: visible messages of a topic (and the group's pop retry topic),
        invisible for the request's time after (broker/rocketmq_model/invisible_time.py)."""
        self._deadline = _STALE
        return self.pops.pop(request)

    def release_client(self, client_id: str) -> int:
        """A 5.x client went away: its auto-renewed deliveries are visible again after 1 s
        (broker/rocketmq_model/invisible_time.py). Returns how many it held."""
        self._deadline = _STALE
        return self.pops.release(client_id)

    def ack(self, group: str, topic: str, receipt_handle: str) -> AckOutcome:
        """5.x ack of one delivery, by its current receipt handle."""
        self._deadline = _STALE
        return self.pops.ack(group, topic, receipt_handle)

    def forward_to_dlq(self, group: str, topic: str, receipt_handle: str) -> AckOutcome:
        """A delivery's message to %DLQ%<group> at once (a 5.x FIFO consumer gave up)."""
        self._deadline = _STALE
        return self.pops.forward_to_dlq(group, topic, receipt_handle)

    def change_invisible_time(self, group: str, topic: str, receipt_handle: str,
                              invisible_ms: int) -> ChangeInvisibleResult:
        """Make a delivery invisible for ``invisible_ms`` from now; returns its new handle."""
        self._deadline = _STALE
        return self.pops.change_invisible_time(group, topic, receipt_handle, invisible_ms)

    def committed_offset(self, group: str, topic: str, queue_id: int) -> int | None:
        """Where ``group`` resumes reading the queue (OffsetBook.committed)."""
        return self.offsets.committed(group, topic, queue_id)

    def commit_offset(self, commit: OffsetCommit) -> CommitOutcome:
        """Store a group's offset, if the topic and the group exist (checked as 5.x
        does, so a typo is an error rather than a silent row)."""
        if self.topics.get(commit.topic) is None:
            return CommitOutcome.TOPIC_NOT_EXIST
        if self.groups.find(commit.group, auto_create=False) is None:
            return CommitOutcome.GROUP_NOT_EXIST
        self.record_offset_commit(commit.group, commit.topic, commit.queue_id, commit.offset)
        return CommitOutcome.COMMITTED

    def queue_bounds(self, topic: str, queue_id: int) -> tuple[int, int]:
        """(min, max) logical offsets of a queue; (0, 0) for one that does not exist."""
        return self.store.min_offset(topic, queue_id), self.store.max_offset(topic, queue_id)

    def offset_at_time(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        """The queue offset stored closest to ``timestamp_ms`` (MessageStore.offset_by_time)."""
        return self.store.offset_by_time(topic, queue_id, timestamp_ms)

    def earliest_store_time(self, topic: str, queue_id: int) -> int:
        """The store time of the queue's first message still held, -1 if none."""
        entry = self.store.queue_entry(topic, queue_id, self.store.min_offset(topic, queue_id))
        rec = self.store.look_message_by_offset(entry[0]) if entry else None
        return rec.store_timestamp if rec else -1

    def register(self, reg: Registration, channel: Channel) -> None:
        """A client's groups, on this connection: a consumer group gets its retry topic
        (when its config has retry queues), and its other members are told when its
        membership or subscriptions change."""
        channel.client_id = reg.client_id
        for c in reg.consumers:
            gc = self.groups.find(c.group)
            if gc is not None and gc.retry_queue_nums > 0:
                self.topics.create_system(retry_topic(c.group), gc.retry_queue_nums, PERM_READ | PERM_WRITE)
            if self.consumers.register(c.group, channel, reg.client_id, c.consume_type, c.message_model,
                                       c.consume_from_where, list(c.subscriptions)):
                self.notify_consumer_ids_changed(c.group, exclude=channel)
        for group in reg.producers:
            self.producers.setdefault(group, {})[channel] = reg.client_id

    def unregister(self, channel: Channel, *, producer_group: str | None = None,
                   consumer_group: str | None = None) -> None:
        """This connection's client leaves a producer group and/or a consumer group."""
        if producer_group:
            self.producers.get(producer_group, {}).pop(channel, None)
        if consumer_group and self.consumers.unregister(consumer_group, channel):
            self.notify_consumer_ids_changed(consumer_group)

    def consumer_ids(self, group: str) -> list[str] | None:
        """The client ids of a consumer group's live members; None when it has none."""
        info = self.consumers.get(group)
        if info is None or not info.channels:
            return None
        return info.client_ids()

    def lock_queues(self, group: str, client_id: str, queues) -> list:
        """Lock (topic, broker name, queue id) queues for an orderly consumer; returns
        those it now holds (held by another live client: not granted)."""
        return self.locks.try_lock(group, queues, client_id, self.clock.now_ms())

    def unlock_queues(self, group: str, client_id: str, queues) -> None:
        self.locks.unlock(group, queues, client_id)

    def brokers(self) -> tuple[BrokerRoute, ...]:
        """The brokers this name server knows: this one."""
        c = self.config
        return (BrokerRoute(c.broker_cluster_name, c.broker_name, self.addr),)

    def route(self, topic: str) -> TopicRoute | None:
        """The topic's route (every queue on this broker), None for an unknown topic."""
        tc = self.topics.get(topic)
        if tc is None:
            return None
        c = self.config
        return TopicRoute((QueueRoute(c.broker_name, tc.read_queue_nums, tc.write_queue_nums,
                                      tc.perm & c.broker_permission, tc.topic_sys_flag),), self.brokers())

    def message_at(self, commit_log_offset: int) -> bytes | None:
        """The stored record at a commit-log offset (an offsetMsgId's), None if none starts there."""
        return self.store.read(commit_log_offset)

    def messages_by_key(self, topic: str, key: str, max_num: int, begin_ms: int, end_ms: int) -> list[bytes]:
        """Stored records of ``topic`` with ``key`` in KEYS or UNIQ_KEY, stored within
        [begin_ms, end_ms], newest first, at most ``max_num``."""
        return self.store.query_by_key(topic, key, max_num, begin_ms, end_ms)

    def pull_or_hold(self, request: PullRequest, channel: Channel, suspend_ms: int, context) -> PullResult | None:
        """A long-polling pull: the pull's result, or None when it found nothing new —
        then it is held until a matching message arrives in its queue or its suspend time
        (``suspend_ms``; ``shortPollingTimeMills`` without ``longPollingEnable``) ends,
        and is answered by a PullReady notification carrying ``context``. The commit it
        carries is made now, once (PullRequestHoldService)."""
        result = pulling.pull(self, request, channel)
        if result.outcome is not PullOutcome.NO_NEW_MESSAGE:
            return result
        wait = suspend_ms if self.config.long_polling_enable else self.config.short_polling_time_mills
        again = request if request.commit_offset is None else PullRequest(
            request.group, request.topic, request.queue_id, request.offset, request.max_msgs, request.subscription,
            request.expression_type, request.sub_version, None)
        self.holds.hold(HeldPull(channel, again, context, request.topic, request.queue_id, request.offset,
                                 result.tag_codes, self.clock.now_ms() + wait, False, 0, result.min_offset))
        return None

    def _answer_held(self, held) -> None:
        """Run a held pull again, now (its time ended)."""
        if not held.channel.closed:
            result = (self.faults.holding and self._held_by_fault(held)) or self.pull(held.request, held.channel)
            self.notify(PullReady(held.channel, held.context, held.request, result))

    def _held_by_fault(self, held) -> PullResult | None:
        """"No new message" for a long poll whose group a fault rule's hold keeps back
        (broker/faults/rules.py): the client pulls again, and its front holds that pull."""
        request = held.request
        if not self.faults.holds(request.group, request.topic, "4.x"):
            return None
        low, high = self.queue_bounds(request.topic, request.queue_id)
        return PullResult(PullOutcome.NO_NEW_MESSAGE, [], held.offset, low, high, None, None, "NO_MESSAGE_IN_QUEUE",
                          None)

    def _answer_arrived(self, held, res, data: bytes) -> None:
        """Answer a held pull that the record just stored (the put's ``res``; ``data``, the
        bytes it wrote) woke, with that record: what running the pull again would find, when it was
        waiting at that very offset (its checks are run again: a permission or a
        subscription may have changed meanwhile). Anything else runs it again."""
        channel = held.channel
        if channel.closed:
            return
        request = held.request
        result = self._held_by_fault(held) if self.faults.holding else None
        if result is not None:
            self.notify(PullReady(channel, held.context, request, result))
            return
        if held.offset == res.queue_offset:
            code_set = pulling.check(self, request, channel)
            if code_set.__class__ is PullResult:
                result = code_set                           # refused now
            elif code_set is None:                          # every tag (else the entry's tagsCode decides: run it)
                offset = held.offset + 1
                kept = self.kept.get(res.commit_log_offset)
                # positional, in PullResult's field order (outcome, records, next_offset,
                # min_offset, max_offset, remark, tag_codes, store_status, stored)
                result = PullResult(_FOUND, [data], offset, held.min_offset, offset, None, None,
                                    "FOUND", None if kept is None else (kept,))
                self.deliveries.pulled(self.clock.now_ms(), request.group, request.topic, request.queue_id,
                                       held.offset, offset, None, channel.client_id or channel.remote)
        if result is None:
            result = self.pull(request, channel)
        self.notify(PullReady(channel, held.context, request, result))

    def record_offset_commit(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """Record ``group``'s offset of a queue, unchecked (OffsetBook.commit)."""
        self.offsets.commit(group, topic, queue_id, offset)

    def record_offsets_deleted(self, group: str, topic: str) -> None:
        """A group no longer reads ``topic`` (a Pulsar unsubscribe): its offsets are gone."""
        self.offsets.delete(group, topic)

    # -- hooks -------------------------------------------------------------------------
    def add_send_back_hook(self, fn: Callable[[ConsumeMessageContext], None]) -> Callable[[], None]:
        self._hooks.append(fn)
        return lambda: self._hooks.remove(fn)

    def add_stored_hook(self, fn: Callable[[MessageRecord, str, dict | None], None]) -> Callable[[], None]:
        """``fn(record, offsetMsgId, map)`` after every record this broker stores (the
        record with the fields the store filled; ``map``: its property map as stored when
        the core knows it, else None — read its stored string). Returns the remover."""
        self._stored_hooks.append(fn)
        return lambda: self._stored_hooks.remove(fn)

    @property
    def has_send_back_hooks(self) -> bool:
        """Whether a send-back needs a ConsumeMessageContext built (one per send-back)."""
        return bool(self._hooks)

    def run_send_back_hooks(self, ctx: ConsumeMessageContext) -> None:
        for fn in self._hooks:
            try:
                fn(ctx)
            except Exception:
                log.exception("send-back hook failed")

    # -- permissions -------------------------------------------------------------------
    @property
    def writeable(self) -> bool:
        return bool(self.config.broker_permission & PERM_WRITE)

    @property
    def readable(self) -> bool:
        return bool(self.config.broker_permission & PERM_READ)

    def set_broker_permission(self, perm: int) -> None:
        """brokerPermission (6 = read+write, 4 = read only, 2 = write only)."""
        if not 0 <= perm <= 15:
            raise ValueError(f"brokerPermission must be 0..15, got {perm}")
        self.config.broker_permission = perm

    # -- time ----------------------------------------------------------------------------
    def tick(self) -> None:
        """Do everything due at the clock's current time (a stopped broker: nothing;
        what came due meanwhile is done at its first tick after it starts)."""
        if self.stopped:
            return
        now = self.clock.now_ms()
        self._deadline = _STALE
        if now >= self._schedule_retry_at:
            self._deliver_due(now)
        pops = self.pops
        if pops._expiry and pops._expiry[0][0] <= now:
            pops.revive_due(now)
        if self.transactions.due:
            self.transactions.tick(now)
        if self.subscriptions.topics:
            self.subscriptions.tick(now)
        holds = self.holds
        if holds._heap and holds._heap[0][0] <= now:
            for held in holds.expired(now):
                self._answer_held(held)
        later = self._later
        while later and later[0][0] <= now:
            heapq.heappop(later)[2]()
        if self._flush_due is not None and now >= self._flush_due:
            self.flush()

    def call_later(self, delay_ms: int, fn: Callable[[], None]) -> None:
        """Call ``fn()`` at the tick ``delay_ms`` from now on this broker's clock (a front's
        answer a fault rule delays: in virtual time, `clock advance` brings it)."""
        heapq.heappush(self._later, (self.clock.now_ms() + delay_ms, next(self._later_seq), fn))
        self._deadline = _STALE

    def hold_mark(self) -> int:
        return self.holds.mark()

    def answer_holds_before(self, mark: int) -> None:
        """Answer (as their suspend timeout would) every pull held before ``mark``.
        A virtual-clock server calls this on a real-time bound: its clients' pull
        timeouts run in real time, and virtual time may stand still for minutes."""
        for held in self.holds.held_before(mark):
            self._answer_held(held)

    def _deliver_due(self, now: int) -> None:
        """Re-store each delayed message due at ``now`` into its real topic: made from
        the record carried since it was stored (a reopen's entries: read back)."""
        sched = self.schedule.scheduler
        store = self.store
        while True:
            head = sched.due_head(now)
            if head is None:
                break
            lane, offset, _, kept = head
            if kept is not None:
                rec = self.schedule.due_copy(kept)
            else:
                rec = self.schedule.time_up(lane, offset)
            if rec is None:  # entry or message gone (e.g. truncated): skip it
                sched.delivered(lane, offset)
                if lane != TIMER_LANE:
                    store.set_delay_offset(lane, offset + 1)
                continue
            # the group whose retry topic it goes back to (none: a producer's delayed send)
            group = None
            topic = rec.topic
            if topic[:_RETRY_LEN] == RETRY_PREFIX:         # (startswith, len: calls, every due message)
                group = topic[_RETRY_LEN:]
                if POP_RETRY_SEPARATOR in group:
                    group = group.partition(POP_RETRY_SEPARATOR)[0]
            if kept is not None:
                res = self.put_message(rec, kind=EventKind.REDELIVERED, group=group, delay_level=0,
                                       waited_level=0 if lane == TIMER_LANE else lane, stored_map=True,
                                       body_crc=kept[0].body_crc, now=now)
            else:
                res = self.put_message(rec, kind=EventKind.REDELIVERED, group=group,
                                       waited_level=0 if lane == TIMER_LANE else lane)
            if res.status is not PutStatus.PUT_OK:
                if not self._schedule_failing:      # one line per failure streak, not one per retry
                    log.warning("re-store of a due delayed message failed (%s: %s); retrying every %d ms",
                                res.status.name, res.remark, _SCHEDULE_RETRY_MS)
                    self._schedule_failing = True
                self._schedule_retry_at = now + _SCHEDULE_RETRY_MS
                break
            if self._schedule_failing:
                log.warning("due delayed messages are re-stored again")
                self._schedule_failing = False
            sched.delivered(lane, offset)
            if lane != TIMER_LANE:
                store.set_delay_offset(lane, offset + 1)

    def next_deadline(self, *, holds: bool = True) -> int | None:
        """When ``tick`` next has something to do (``holds=False``: leaving out the
        suspend timeouts of held pulls). Cached: found again only after something
        changed it (Pulsar cursors, which keep their own times, are asked each time)."""
        if self.stopped:
            return None
        if self._deadline is _STALE:
            self._find_deadline()
        if holds:
            if self._deadline_holds != self.holds.version:
                self._held_deadline()
            d = self._deadline
        else:
            d = self._deadline_free
        if d is _STALE:                 # (not cached: while a delayed entry's store time lies ahead)
            d = self._find_deadline()[0 if holds else 1]
        if self.subscriptions.topics:
            s = self.subscriptions.next_deadline()
            if s is not None and (d is None or s < d):
                d = s
        return d

    def _find_deadline(self) -> tuple:
        """(the next deadline, the next one but the held pulls'), cached unless a delayed
        entry's store time lies ahead of the clock (then the schedule's times follow it)."""
        best = self._flush_due
        expiry = self.pops._expiry                  # (PopService.next_deadline: its heap's top)
        if expiry and (best is None or expiry[0][0] < best):
            best = expiry[0][0]
        if self._later and (best is None or self._later[0][0] < best):
            best = self._later[0][0]
        if self.transactions.due:                   # (half messages waiting for a check-back)
            t = self.transactions.next_deadline()
            if t is not None and (best is None or t < best):
                best = t
        sched = self.schedule.scheduler
        now = self.clock.now_ms()
        d = sched.next_deadline(now)
        if d is not None:
            if d < self._schedule_retry_at:
                d = self._schedule_retry_at
            if best is None or d < best:
                best = d
        h = self.holds.next_deadline()
        held = best if h is None or (best is not None and best <= h) else h
        if now >= sched.skew_until:
            self._deadline_free = best
            self._deadline = held
            self._deadline_holds = self.holds.version
        else:
            self._deadline = self._deadline_free = _STALE
        return held, best

    def _held_deadline(self) -> None:
        """A pull was held or left since: the next deadline with the holds' again."""
        best = self._deadline_free
        if best is _STALE:
            return
        h = self.holds.next_deadline()
        self._deadline = best if h is None or (best is not None and best <= h) else h
        self._deadline_holds = self.holds.version

    def advance_clock(self, ms: int) -> int:
        """Move a VirtualClock forward by ``ms``, ticking at every deadline on the way,
        so everything due by then has been re-stored and waiting pulls answered."""
        from .cluster import advance_together

        return advance_together(self.clock, [self], ms)

    # -- persistence -------------------------------------------------------------------
    def _dirty(self, now: int) -> None:
        if self._persistent and self._flush_due is None:
            self._flush_due = now + self.config.flush_interval_commit_log
            self._deadline = _STALE

    def save_configs(self) -> Exception | None:
        """Write the topic and group documents whole (each change was recorded in their
        journals when it was made, so a crash never leaves stored messages in a topic
        the broker forgot). Returns the write's failure (already logged) instead of
        raising it."""
        return self.configs.save()

    def _change_failure(self) -> Exception | None:
        """Why the last config change could not be recorded, None when it was."""
        return self.configs.error if self.configs.pending else None

    def flush(self) -> None:
        """Persist the log, offsets, delay offsets and changed topic/group configs. A
        flush the disk refuses (full, read-only) takes nothing down: it is logged once
        per failure streak, everything stays in memory, and the next one comes a flush
        interval later (not at every tick)."""
        self._deadline = _STALE
        self.save_configs()
        self.store.set_delay_offsets(self.schedule.scheduler.offsets())
        # a store refusing writes (a full disk) tries the refused size again: smaller puts
        # may work meanwhile, and they alone do not end the state (no cost while writes work)
        self.store.write_refusal()
        try:
            self.store.flush()
            self.schedule.save_timer_progress()
            # (after the log: what they write — Pulsar cursors, producers' sequence ids, the
            # clock — never runs ahead of the records it is about; a full disk stops them too)
            for hook in self.flush_hooks:
                hook()
        except StoreError as exc:
            if self._flush_error is None:
                log.error("flush of the store failed: %s; the broker goes on serving and tries again every %d ms "
                          "(said once until a flush works)", exc, self.config.flush_interval_commit_log)
            self._flush_error = str(exc)      # (not the exception: its traceback would keep frames alive)
            self._flush_due = self.clock.now_ms() + self.config.flush_interval_commit_log
            return
        if self._flush_error is not None:
            log.warning("the store flushes again (the last flushes had failed: %s)", self._flush_error)
            self._flush_error = None
        self._flush_due = None

    def close(self) -> str | None:
        """Flush and close the store. A failure to persist is logged and returned (why),
        not raised: what could not be written is lost with the process."""
        if self._closed:
            return None
        self._closed = True
        self.flush()
        error = self._flush_error
        try:
            self.store.close()
        except StoreError as exc:
            log.error("closing the store: %s; what was not written is lost", exc)
            error = str(exc)
        return error

    # -- topics clients name ---------------------------------------------------------------
    # (A 5.x client's route names only topics that exist, as a proxy answers it; a 4.x
    # send creates its topic from TBW102 in broker/rocketmq_model/sending.py.)
    def ensure_pulsar_topic(self, stored: str) -> TopicConfig:
        """The store topic a Pulsar producer or consumer names (pulsar_names.store_topic),
        created with its one queue when it does not exist yet, as a Pulsar broker's
        allowAutoTopicCreation does."""
        return self.topics.get(stored) or self.pulsar_topics.make(stored)

    def _pulsar_defaults(self) -> dict:
        """The broker-wide values of Pulsar's policies (broker.conf)."""
        return {"deduplicationEnabled": self.config.broker_deduplication_enabled,
                "compactionThreshold": self.config.broker_service_compaction_threshold_in_bytes}

    def _compaction_threshold(self, stored: str) -> int:
        return int(self.pulsar_topics.effective(stored, "compactionThreshold") or 0)

    # -- conveniences for embedding programs and tests -----------------------------------
    def create_topic(self, topic: str, queue_nums: int = 4, perm: int = PERM_READ | PERM_WRITE, *,
                     order: bool = False, message_type: str | None = None):
        """UPDATE_AND_CREATE_TOPIC from Python; ``message_type``: a 5.x topic's type
        (normal, fifo, delay, transaction; ValueError for another)."""
        from .rocketmq_model.message_types import MESSAGE_TYPE_ATTRIBUTE, parse_message_type
        from .rocketmq_model.topics import check_topic_settings, validate_topic_name

        validate_topic_name(topic)
        check_topic_settings(queue_nums, queue_nums, perm)
        check_pulsar_store_topic(self.topics.table, topic, queue_nums, queue_nums)
        parsed = parse_message_type(message_type) if message_type else None
        attributes = {MESSAGE_TYPE_ATTRIBUTE: parsed} if parsed else {}
        return self.topics.put(TopicConfig(topic, queue_nums, queue_nums, perm, order=order, attributes=attributes))

    def update_group(self, gc) -> str | None:
        """Create or change a consumer group's config (``groups.SubscriptionGroupConfig``),
        written before this returns; returns why it could not be written (the old config
        is then back), None when it was."""
        previous = self.groups.table.get(gc.group_name)
        self.groups.put(gc)
        failure = self._change_failure()
        if failure is None:
            return None
        if previous is None:
            self.groups.table.pop(gc.group_name, None)
        else:
            self.groups.put(previous)
        return str(failure)

    def update_topic(self, tc) -> str | None:
        """Create or change a topic (``topics.TopicConfig``) as UPDATE_AND_CREATE_TOPIC
        does: a legal name, not a system topic, queue counts and perm in range (else
        RequestRefused with upstream's remark, nothing changed); the change is written
        before this returns. Returns why it could not be written (the old config is
        then back in place), None when it was."""
        from .rocketmq_model.topics import check_topic_settings, validate_topic_name

        validate_topic_name(tc.topic_name)
        if self.topics.is_system(tc.topic_name):
            raise RequestRefused(f"The topic[{tc.topic_name}] is conflict with system topic.")
        check_topic_settings(tc.read_queue_nums, tc.write_queue_nums, tc.perm)
        check_pulsar_store_topic(self.topics.table, tc.topic_name, tc.read_queue_nums, tc.write_queue_nums)
        previous = self.topics.get(tc.topic_name)
        self.topics.put(tc)
        failure = self._change_failure()
        if failure is None:
            return None
        if previous is None:
            self.topics.delete(tc.topic_name)
        else:
            self.topics.put(previous)
        return str(failure)

    def _check(self) -> None:
        """Assert the core's invariants (for the stateful tests, after every step):
        the store's own (MessageStore._check); each delay level's next offset lies
        inside its schedule queue, with no more entries pending than the queue holds;
        every held pull and registered
        consumer is on an open connection, held pulls wait on existing topics; topic
        configs are in range and every change recorded."""
        self.store._check()
        self.pops._check()
        self.transactions._check_invariants()
        sched = self.schedule.scheduler
        for level, offset in sched.offsets().items():
            lo, hi = self.queue_bounds(SCHEDULE_TOPIC, level - 1)
            assert offset <= hi, f"delay level {level} is at offset {offset} past its queue's end {hi}"
            assert sched.pending_count(level) <= hi - lo, f"level {level} waits for more entries than its queue has"
        lo, hi = self.queue_bounds(TIMER_TOPIC, 0)
        floor, delivered = sched.timer_progress()
        assert floor <= hi and all(floor <= o < hi for o in delivered), "timer progress past its queue's end"
        assert sched.pending_count(TIMER_LANE) <= hi - lo, "the timer lane waits for more entries than its queue has"
        for held in self.holds.waiting(1 << 62):
            assert not held.channel.closed, f"a pull held for a closed connection {held.channel}"
            assert self.topics.get(held.topic) is not None, f"a pull held on unknown topic {held.topic}"
        for group, info in self.consumers.groups.items():
            assert all(not ch.closed for ch in info.channels), f"group {group} keeps a closed connection"
        for name, tc in self.topics.table.items():
            assert 1 <= tc.read_queue_nums <= 1024 and 1 <= tc.write_queue_nums <= 1024, name
            assert 0 <= tc.perm <= 7, name
        assert not self.configs.pending, "a config change was not recorded"
        if self._deadline is not _STALE and self._deadline_holds == self.holds.version:
            cached = (self._deadline, self._deadline_free)
            assert cached == self._find_deadline(), f"the cached next deadlines {cached} are stale"

    def born_host_of(self, channel: Channel):
        return _born_host(channel.remote)


@lru_cache(maxsize=4096)
def _born_host(remote: str):
    """A connection's address as a record's born host (parsed once per connection)."""
    try:
        return parse_host(remote)
    except ValueError:
        return ("127.0.0.1", 0)
