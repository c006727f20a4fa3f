"""BrokerCore: the synchronous, sans-I/O broker (and name server) behind every dialect —
4.x remoting, 5.x gRPC, Pulsar, HTTP and MQTT fronts, the SDK in process — and its one door.

Typed operations go in (broker/operations.py: ``send``, ``pull``, ``pop``, ``ack`` ...)
and typed results come out; what happens later (held pulls answered, consumers to
rebalance, something to dispatch to a Pulsar subscription) reaches the fronts as typed
notifications (``subscribe``). Its other typed methods are the mixins of broker/facade/;
the services behind it (store, topics, subscriptions, faults ...) are the core's own,
never reached from a front or the SDK. Time comes only from the injected Clock and
randomness only from the injected ``random.Random``; the core never sleeps, never starts
a thread and never touches a socket, so a run is reproducible from a seed and a test can
jump the clock. Drivers — the asyncio listeners, the SDK's in-process transport, the
simulator — call ``tick()`` at ``next_deadline()``. See CORE_API.md for the contract.
"""
from __future__ import annotations

import dataclasses
import heapq
import itertools
import logging
import random
from typing import Callable

from rocketmq_emulator.delay_scheduler import TIMER_LANE, Clock, VirtualClock
from rocketmq_emulator.store import MessageStore, PutStatus, StoreConfig, StoreError
from rocketmq_emulator.store.records import POP_RETRY_SEPARATOR, RETRY_PREFIX, MessageRecord, Prop

from .config import PERM_READ, PERM_WRITE, BrokerConfig
from .rocketmq_model.config_writer import ConfigWriter
from .core_types import Channel, ConsumeMessageContext
from .views.delivery_log import DeliveryLog
from .dialects import check_pulsar_store_topic
from .events import Event, EventKind, EventLog
from .facade import AdminDoor, PulsarAdminDoor, PulsarDoor, ViewsDoor
from .rocketmq_model.groups import ConsumerManager, GroupManager, LockManager
from .rocketmq_model.pulling import Pulling, check_filter
from .rocketmq_model.sending import SendBackHooks, Sending
from .kept_records import KeptRecords
from .put_kinds import DUE, DUE_KEPT, SENT, PutKind
from .rocketmq_model.long_polling import HeldPull, PullHoldService
from .rocketmq_model.offset_book import OffsetBook
from .views.rates import CONSUMED, PRODUCED, RateRing
from .rocketmq_model.invisible_time import PopService
from .rocketmq_model.lite_topics import (EXCLUSIVE, LITE_PREFIX, LITE_SUB_MODEL_ATTRIBUTE, LiteSyncOutcome, LiteTopics,
                                         lite_topic_problem)
from .rocketmq_model.message_types import LITE, LITE_TOPIC_PROPERTY, mismatch
from .rocketmq_model.priorities import priority_queue
from .pulsar_model.compaction import Compaction, record_keys
from .pulsar_model.cursors import SubscriptionService
from .pulsar_model.names import PulsarTopic
from .pulsar_model.non_persistent import NonPersistentTopics
from .pulsar_model.producers import PulsarProducers
from .pulsar_model.topics import PulsarTopics
from .operations import (AckOutcome, BatchSendRequest, BrokerRoute, ChangeInvisibleResult, CommitOutcome,
                         EndTransaction, EndTransactionResult, OffsetCommit, PopOutcome, PopRequest, PopResult, PullOutcome,
                         PullRequest, PullResult, QueueRoute, Registration,
                         SendBack, SendBackResult, SendOutcome, SendRequest, SendResult, TopicRoute)
from .errors import RequestRefused
from .faults import door as fault_door
from .faults.door import FaultOutcome
from .faults.rules import FaultSet
from .notifications import (ConsumerIdsChanged, LiteUnsubscribed, Notification, Notifier, PullReady,
                            PulsarConsumersDetached, PulsarTopicsChanged)
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


class BrokerCore(AdminDoor, ViewsDoor, PulsarDoor, PulsarAdminDoor):
    def __init__(self, store: MessageStore, clock: Clock, config: BrokerConfig | None = None,
                 rng: random.Random | None = None, *, persistent: bool | None = None,
                 entry_keys: Callable | None = None) -> None:
        """``entry_keys(record)``: the keys Pulsar compaction reads of a stored entry (the
        Pulsar entry codec's ``keys_of``, which whoever builds a broker that serves Pulsar
        passes); None: a record's KEYS property only (pulsar_model/compaction.py)."""
        self.store = store
        self.clock = clock
        self.config = config or BrokerConfig()
        self.rng = rng if rng is not None else random.Random(0)
        self.levels = self.config.delay_levels
        self._store_host = (self.config.broker_ip, self.config.listen_port)
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
        self.next_held_pull_deadline = self.holds.next_deadline     # (idle skipping's questions, below)
        self.held_pulls_until = self.holds.waiting
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
                               self.deliveries, self.notify)
        # Pulsar: topics and policies, compaction, cursors, producers (broker/pulsar_*.py)
        self.pulsar_topics = PulsarTopics(store, self.topics, self.notify, self._pulsar_defaults)
        self._non_persistent = NonPersistentTopics()         # nothing stored: see its module
        first = self.pulsar_topics.first_offset
        self.compaction = Compaction(store, first, self._compaction_threshold, entry_keys or record_keys)
        self.subscriptions = SubscriptionService(store, clock, self.config, self.topics, self.offsets, self.notify,
                                                 first, self.compaction, deliveries=self.deliveries,
                                                 rates=self.rates)
        self.pulsar_producers = PulsarProducers(
            store, lambda t: bool(self.pulsar_topics.effective(t, "deduplicationEnabled")), first,
            lambda t: self._compaction_threshold(t) > 0)
        self.pulsar_topics.policy_changed.append(self.pulsar_producers.refresh)
        # half messages and their check-back ladder (broker/rocketmq_model/transactions.py)
        self.transactions = TransactionService(store, clock, self.config, self.topics, self.put_message, self.notify,
                                               self.producers, self._store_host)
        # faults on demand (broker/faults/rules.py): rules the fronts ask at their one call into
        # the core; their random draws come from a source of their own, so a run without
        # rules draws nothing and gives the same bytes
        self.faults = FaultSet(clock, random.Random(0), self.events, self.config.broker_name)
        # the fronts' and the SDK's one test before they ask the door: False while no rule
        # is installed (an attribute of the core, kept as the rules change)
        self.faults_active = False
        self.faults.on_change.append(self._faults_changed)
        self._later: list[tuple[int, int, Callable[[], None]]] = []     # (due ms, seq, fn): call_later
        self._later_seq = itertools.count()
        # lite topics and lite consumers' subscriptions (broker/rocketmq_model/lite_topics.py)
        self.lite = LiteTopics(self.topics, self.config, clock, self.call_later)
        self.lite.on_unsubscribed = self._lite_unsubscribed
        self._hooks = SendBackHooks()
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
        # the 4.x send and pull operations, given the pieces they use
        self.sending = Sending(self.config, self.topics, self.groups, clock, self.rng, store, self._store_host,
                               self.put_message, self.kept, self.schedule, self.transactions, self._hooks)
        self.pulling = Pulling(self.config, self.groups, self.topics, self.consumers, store, self.offsets,
                               self.deliveries)

    @property
    def store_host(self) -> tuple[str, int]:
        """This broker's address as its records carry it (born/store host, offset ids)."""
        return self._store_host

    @store_host.setter
    def store_host(self, host: tuple[str, int]) -> None:
        # serve learns its port only after binding: the parts that stamp records hold the
        # address too (read on every send), so they are told here, the one place it changes
        self._store_host = self.sending.store_host = self.transactions.store_host = host

    @classmethod
    def in_memory(cls, clock: Clock | None = None, config: BrokerConfig | None = None,
                  rng: random.Random | None = None, *, entry_keys: Callable | None = None) -> "BrokerCore":
        """A broker on the in-memory store (VirtualClock unless a clock is given)."""
        config = config or BrokerConfig()
        store = MessageStore(None, cls.store_config(config))
        return cls(store, clock or VirtualClock(), config, rng, persistent=False, entry_keys=entry_keys)

    @classmethod
    def open(cls, root, clock: Clock, config: BrokerConfig | None = None,
             rng: random.Random | None = None, *, entry_keys: Callable | None = None) -> "BrokerCore":
        """A broker on a disk store at ``root`` (created if missing, recovered if not)."""
        config = config or BrokerConfig()
        return cls(MessageStore(root, cls.store_config(config)), clock, config, rng, persistent=True,
                   entry_keys=entry_keys)

    @staticmethod
    def store_config(config: BrokerConfig) -> StoreConfig:
        return StoreConfig(segment_size=config.maped_file_size_commit_log,
                           max_message_size=max(config.max_message_size, config.pulsar_max_message_size),
                           flush_disk_type=config.flush_disk_type,
                           delay_levels_ms=config.delay_levels.delays_ms, fsync=config.fsync)

    # -- connections ---------------------------------------------------------------
    @property
    def addr(self) -> str:
        return self.config.addr

    def connect(self, remote: str = "127.0.0.1:0", owner=None, dialect: str | None = None) -> Channel:
        """A client connection; ``owner``: the front that serves it (its notifications
        go there); ``dialect``: the protocol its client speaks (what fault rules match)."""
        return Channel(next(self._channel_ids), remote, owner=owner, dialect=dialect)

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

    # -- the one put path: divert -> append (the store dispatches) -> notify -----------
    def put_message(self, rec: MessageRecord, how: PutKind = SENT, group: str | None = None,
                    delay_level: int | None = None, deliver_at_ms: int | None = None, waited_level: int = 0,
                    body_crc: int | None = None, now: int | None = None):
        """Store ``rec`` as the kind of put ``how`` says (broker/put_kinds.py: the event it
        records, stored as it is or diverted, its map vouched for or not) and tell whoever
        waits for it. A diverted put is delayed by ``delay_level``, or to
        ``deliver_at_ms``, or by its DELAY / TIMER_* properties when both are None
        (broker/rocketmq_model/delay_queue.py). Returns the store's PutResult; ``rec`` is
        updated in place. The request was validated by the operation that built ``rec``
        (sending.py, invisible_time.py, transactions.py). The stages, each a section
        below (one method: a call per stage would be paid on every put, twice per retried
        delivery):

        1. divert: a delayed message goes to its delay level's or the timer's queue
           (ScheduleService.divert);
        2. append: the store writes it and gives it its queue entry (MessageStore.put,
           which asks store/dispatch.py);
        3. stored: a flush becomes due, the map as stored is completed when the caller
           vouched for it (MessageRecord.complete_stored_map), the stored hooks and the
           rates hear of it;
        4. waits (a delayed message: the schedule holds its due time; DELAYED and
           SENT_BACK recorded) or arrived (its event, the Pulsar subscriptions reading
           its topic, the record kept with its map as stored, the held pulls it wakes
           answered).

        ``group``: whose it is; ``waited_level``: the level a delayed message come due
        waited at (its REDELIVERED event); ``body_crc``: the body's CRC when known (a copy
        of a kept record's body); ``now``: the clock's time when the caller just read it."""
        if now is None:
            now = self.clock.now_ms()
        # 1. divert
        lane = None if how.as_is else self.schedule.divert(rec, now, delay_level, deliver_at_ms)
        # 2. append (the store asks store/dispatch.py for the queue entry)
        res = self.store.put(rec, now, body_crc)
        if res[0] is not _PUT_OK:
            return res
        # 3. stored
        if self._flush_due is None and self._persistent:   # (a call once per flush, none in memory)
            self._dirty(now)
        self._deadline = _STALE
        stored = rec.complete_stored_map() if how.vouched_map and self._prop_crc else None  # the map as stored
        if self._stored_hooks:
            for fn in self._stored_hooks:
                fn(rec, res.msg_id, stored)
        props = rec.properties
        kind = how.event
        if kind is not EventKind.REDELIVERED:          # (a delayed message come due was counted when sent)
            self.rates.stored(now, kind, rec.topic, props, group)
        events = self.events
        if lane is not None:
            # 4a. waits in its lane (the record carried until it is due: ScheduleService.due_copy)
            due = self.schedule.scheduled(lane, rec, res.queue_offset, res.store_timestamp,
                                          None if stored is None else (rec, stored))
            if EventKind.DELAYED in events.wanted:
                events.append(Event(EventKind.DELAYED, now, rec.topic, rec.queue_id, res.queue_offset,
                                    res.commit_log_offset, props.get(Prop.UNIQ_KEY), group, rec.reconsume_times,
                                    lane, due, props.get(Prop.ORIGIN_MESSAGE_ID), props.get(Prop.REAL_TOPIC)))
            if kind is EventKind.SENT_BACK and EventKind.SENT_BACK in events.wanted:
                events.append(Event(EventKind.SENT_BACK, now, props[Prop.REAL_TOPIC], int(props[Prop.REAL_QID]),
                                    res.queue_offset, res.commit_log_offset, props.get(Prop.UNIQ_KEY), group,
                                    rec.reconsume_times, lane, due, props[Prop.ORIGIN_MESSAGE_ID],
                                    props[Prop.RETRY_TOPIC]))
            return res
        # 4b. arrived: readable now
        if rec.topic in self.subscriptions.topics:      # a Pulsar-style subscription reads it
            self.subscriptions.stored(rec.topic)
        if kind is EventKind.SENT_BACK:
            kind = EventKind.STORED         # (a send-back that is not delayed: a transaction half)
        if kind in events.wanted:
            events.append(Event(kind, now, rec.topic, rec.queue_id, res.queue_offset, res.commit_log_offset,
                                props.get(Prop.UNIQ_KEY), group, rec.reconsume_times, waited_level, None,
                                props.get(Prop.ORIGIN_MESSAGE_ID), props.get(Prop.RETRY_TOPIC)))
        kept = self.kept.keep(rec, stored)
        if self.holds._by_queue:
            data = None
            for held in self.holds.arrived(rec.topic, rec.queue_id, res.queue_offset, props):
                if data is None:
                    data = self.store.last_put
                self._answer_arrived(held, res, data, now, kept)
        return res

    # -- typed operations (broker/operations.py) ---------------------------------------
    def send(self, request: SendRequest, channel: Channel) -> SendResult:
        """Store one message (broker/rocketmq_model/sending.py)."""
        return self.sending.send(request, channel)

    def send_batch(self, request: BatchSendRequest, channel: Channel) -> SendResult:
        """Store a batch of one topic and queue (broker/rocketmq_model/sending.py)."""
        return self.sending.send_batch(request, channel)

    def send_back(self, request: SendBack) -> SendBackResult:
        """A consumer gives a stored message back: retried later or dead-lettered, as
        the retry lifecycle decides (broker/rocketmq_model/sending.py)."""
        return self.sending.send_back(request)

    def end_transaction(self, request: EndTransaction) -> EndTransactionResult:
        """A producer commits or rolls back a half message, or does not know yet
        (broker/rocketmq_model/transactions.py)."""
        return self.transactions.end(request)

    def pull(self, request: PullRequest, channel: Channel) -> PullResult:
        """Read a queue for a group (broker/rocketmq_model/pulling.py); commits ``commit_offset``."""
        return self.pulling.pull(request, channel, self.clock.now_ms())

    def pop(self, request: PopRequest) -> PopResult:
        """5.x receive: visible messages of a topic (and the group's pop retry topic),
        invisible for the request's time after (broker/rocketmq_model/invisible_time.py)."""
        self._deadline = _STALE
        return self.pops.pop(request)

    def release_client(self, client_id: str) -> int:
        """A 5.x client went away: its auto-renewed deliveries are visible again after 1 s
        (broker/rocketmq_model/invisible_time.py), its lite subscriptions end. Returns how
        many deliveries it held."""
        self._deadline = _STALE
        self.lite.forget(client_id)
        return self.pops.release(client_id)

    # -- lite topics (broker/rocketmq_model/lite_topics.py) -----------------------------------
    def send_lite(self, request: SendRequest, lite_topic: str, channel: Channel) -> SendResult:
        """Store a message of lite topic ``lite_topic`` of the LITE topic ``request.topic``:
        in the lite topic's own queue, made on its first message."""
        why = lite_topic_problem(lite_topic)
        if why is not None:
            return SendResult(SendOutcome.LITE_TOPIC_ILLEGAL, remark=why)
        tc = self.topics.get(request.topic)
        if tc is None:
            return self.sending.send(request, channel)         # (its refusal: no such topic)
        props = dict(request.properties or {})
        props[LITE_TOPIC_PROPERTY] = lite_topic
        why = mismatch(tc.message_type or LITE, props, request.deliver_at_ms)
        if why is not None:
            return SendResult(SendOutcome.MESSAGE_TYPE_MISMATCH, remark=why)
        if not tc.writeable:
            return SendResult(SendOutcome.TOPIC_NOT_WRITEABLE, remark=f"the topic[{request.topic}] sending message "
                                                                      f"is forbidden")
        stored, why = self.lite.destination(request.topic, lite_topic)
        if why is not None:
            return SendResult(SendOutcome.LITE_TOPIC_QUOTA_EXCEEDED, remark=why)
        return self.sending.send(dataclasses.replace(request, topic=stored, queue_id=0, properties=props), channel)

    def sync_lite_subscription(self, client_id: str, group: str, topic: str, action: int,
                               lite_topics) -> tuple[str, str]:
        """SyncLiteSubscription: (LiteSyncOutcome, why)."""
        gc = self.groups.find(group)
        if gc is None:
            return LiteSyncOutcome.GROUP_NOT_EXIST, f"subscription group not exist, {group}"
        exclusive = gc.attributes.get(LITE_SUB_MODEL_ATTRIBUTE) == EXCLUSIVE
        return self.lite.sync(client_id, group, topic, action, lite_topics, exclusive)

    def pop_lite(self, request: PopRequest, client_id: str) -> PopResult:
        """A lite consumer's receive: the lite topics it subscribed to, nothing else."""
        stored = self.lite.subscribed(client_id, request.group, request.topic)
        if stored is None:
            if self.topics.get(request.topic) is None:
                return PopResult(PopOutcome.TOPIC_NOT_EXIST, remark=f"topic {request.topic} not exist")
            stored = []
        self._deadline = _STALE
        return self.pops.pop_lite(request, stored)

    def lite_topics_of(self, topic: str) -> list[tuple[str, int]]:
        """(lite topic, last write ms) of a LITE topic's lite topics."""
        return self.lite.of_parent(topic)

    def lite_subscriptions_of(self, group: str) -> dict[str, tuple[str, list[str]]]:
        """client id -> (topic, lite topics) of a group's lite consumers."""
        return self.lite.subscriptions_of(group)

    def lite_counts(self) -> tuple[int, int]:
        """(lite topics, lite subscriptions) on this broker."""
        return self.lite.counts()

    def lite_census(self) -> tuple[dict[str, int], dict[str, int]]:
        """(LITE topic -> its lite topics, group -> its lite subscriptions) on this broker."""
        return self.lite.census()

    def is_lite_store_topic(self, topic: str) -> bool:
        """Whether ``topic`` is a lite topic's own queue (%LMQ%<parent>%<lite>): kept as a
        topic here, but never one upstream lists (its LMQ has no topic config)."""
        return topic.startswith(LITE_PREFIX)

    def _lite_unsubscribed(self, ended) -> None:
        for client, group, lite in ended:
            self.notify(LiteUnsubscribed(client, group, lite))

    # -- priority messages (broker/rocketmq_model/priorities.py) -----------------------------
    def priority_queue(self, topic: str, priority: int) -> int:
        """The queue of a message of ``priority`` on ``topic`` (-1: no such topic, the
        send says so)."""
        tc = self.topics.get(topic)
        return priority_queue(priority, tc.write_queue_nums) if tc is not None else -1

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
        rec = self.store.record_at(topic, queue_id, self.store.min_offset(topic, queue_id))
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

    def registered_as(self, reg: Registration, channel: Channel) -> bool:
        """Whether ``register(reg, channel)`` would change nothing: the connection already
        carries the client id; each consumer group exists (with its retry topic when it
        has retry queues), has this connection as that client, the same consume type,
        model and start, the same topics, none at a newer subscription version; each
        producer group has this connection as that client. (Idle skipping asks it
        before it carries a heartbeat over an idle span.)"""
        cid = reg.client_id
        if getattr(channel, "client_id", None) != cid:
            return False
        for c in reg.consumers:
            gc = self.groups.table.get(c.group)
            if gc is None or (gc.retry_queue_nums > 0 and self.topics.get(retry_topic(c.group)) is None):
                return False
            info = self.consumers.get(c.group)
            if info is None or info.channels.get(channel) != cid:
                return False
            if (info.consume_type, info.message_model, info.consume_from_where) != \
                    (c.consume_type, c.message_model, c.consume_from_where):
                return False
            subs = info.subscriptions
            if set(subs) != {s.topic for s in c.subscriptions}:
                return False
            if any(s.sub_version > subs[s.topic].sub_version for s in c.subscriptions):
                return False
        return all(self.producers.get(group, {}).get(channel) == cid for group in reg.producers)

    def unregister(self, channel: Channel, *, producer_group: str | None = None,
                   consumer_group: str | None = None) -> None:
        """This connection's client leaves a producer group and/or a consumer group."""
        if producer_group:
            self.producers.get(producer_group, {}).pop(channel, None)
        if consumer_group and self.consumers.unregister(consumer_group, channel):
            self.notify_consumer_ids_changed(consumer_group)

    def check_filter(self, expression_type: str | None, expression: str | None):
        """(FilterCheck, remark) of a 4.x consumer's subscription at its start
        (CHECK_CLIENT_CONFIG; broker/rocketmq_model/pulling.py)."""
        return check_filter(expression_type, expression, self.config.enable_property_filter)

    def consumer_ids(self, group: str) -> list[str] | None:
        """The client ids of a consumer group's live members; None when it has none."""
        info = self.consumers.get(group)
        if info is None or not info.channels:
            return None
        return info.client_ids()

    def lock_queues(self, group: str, client_id: str, queues, *, now_ms: int | None = None) -> list:
        """Lock (topic, broker name, queue id) queues for an orderly consumer; returns
        those it now holds (held by another live client: not granted). ``now_ms``: when
        the request was sent, when not now (idle skipping's renewal at the last time
        it would have come, over an idle span it carries)."""
        return self.locks.try_lock(group, queues, client_id, self.clock.now_ms() if now_ms is None else now_ms)

    def lock_holder(self, group: str, queue: tuple[str, str, int]) -> str | None:
        """The client id holding ``group``'s lock of the (topic, broker name, queue id)
        queue now, None when no live lock holds it."""
        return self.locks.holder(group, queue, self.clock.now_ms())

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

    def pull_or_hold(self, request: PullRequest, channel: Channel, suspend_ms: int, context, *,
                     now_ms: int | None = None) -> PullResult | None:
        """A long-polling pull: the pull's result, or None when it found nothing new —
        then it is held until a matching message arrives in its queue or its suspend time
        (``suspend_ms``; ``shortPollingTimeMills`` without ``longPollingEnable``) ends,
        and is answered by a PullReady notification carrying ``context``. The commit it
        carries is made now, once (PullRequestHoldService). ``now_ms``: when the pull was
        sent, when not now (idle skipping's pull sent again at the last expiry of an idle
        span it carries: its hold's deadline counts from then)."""
        now = self.clock.now_ms() if now_ms is None else now_ms
        result = self.pulling.pull(request, channel, now)
        if result.outcome is not PullOutcome.NO_NEW_MESSAGE:
            return result
        wait = suspend_ms if self.config.long_polling_enable else self.config.short_polling_time_mills
        again = request if request.commit_offset is None else PullRequest(
            request.group, request.topic, request.queue_id, request.offset, request.max_msgs, request.subscription,
            request.expression_type, request.sub_version, None)
        self.holds.hold(HeldPull(channel, again, context, request.topic, request.queue_id, request.offset,
                                 result.tag_codes, now + wait, False, 0, result.min_offset))
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
        if not self.faults.holds(request.group, request.topic, held.channel.dialect):
            return None
        low, high = self.queue_bounds(request.topic, request.queue_id)
        return PullResult(PullOutcome.NO_NEW_MESSAGE, [], held.offset, low, high, None, None, "NO_MESSAGE_IN_QUEUE",
                          None)

    def _answer_arrived(self, held, res, data: bytes, now: int, kept) -> None:
        """Answer a held pull that the record just stored (the put's ``res``; ``data``, the
        bytes it wrote; ``now``, its time; ``kept``, what KeptRecords.keep kept of it)
        woke, with that record: what running the pull again would find, when it was
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
            code_set = self.pulling.check(request, channel)
            if code_set.__class__ is PullResult:
                result = code_set                           # refused now
            elif code_set is None:                          # every tag (else the entry's tagsCode decides: run it)
                offset = held.offset + 1
                if kept is not None and kept[1] is None:        # (its map as stored: parsed now)
                    kept = self.kept.get(res.commit_log_offset)
                # positional, in PullResult's field order (outcome, records, next_offset,
                # min_offset, max_offset, remark, tag_codes, store_status, stored)
                result = PullResult(_FOUND, [data], offset, held.min_offset, offset, None, None,
                                    "FOUND", None if kept is None else (kept,))
                self.deliveries.pulled(now, request.group, request.topic, request.queue_id,
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
        self._hooks.run(ctx)

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

    # -- fault rules: the door (broker/faults/door.py) ------------------------------------------
    # A front asks these at its one call into the core while ``faults.active`` (with no
    # rule installed, that attribute is the whole cost) and translates the outcome into
    # its wire's terms; no front reads a rule.
    def _faults_changed(self) -> None:
        self.faults_active = self.faults.active

    def fault_outcome(self, operation, topic: str | None = None, group: str | None = None,
                      client: str | None = None, dialect: str | None = None, kinds=None) -> FaultOutcome | None:
        """What the fault rule that fires for this call does to it (None: no rule fires;
        ``kinds``: only rules with one of these outcomes)."""
        return fault_door.decide(self.faults, operation, topic, group, client, dialect, kinds)

    def fault_held(self, group: str | None, topic: str | None, dialect: str | None, count: bool = False) -> bool:
        """Whether a hold rule keeps deliveries to ``group`` back now (``count``: a request
        the front holds for it, a hit on the rule)."""
        return fault_door.held(self.faults, group, topic, dialect, count)

    def fault_hold_ends(self) -> int | None:
        """When a running hold's window ends (what it keeps back is tried again then)."""
        return self.faults.hold_ends()

    def fault_applies(self, rule_id: int) -> bool:
        """Whether the rule an outcome came from is installed and in its window now."""
        return self.faults.applies_now(rule_id)

    def on_faults_changed(self, fn: Callable[[], None]) -> Callable[[], None]:
        """Call ``fn()`` after the rules change; returns what stops it."""
        hooks = self.faults.on_change
        hooks.append(fn)

        def stop() -> None:
            if fn in hooks:
                hooks.remove(fn)
        return stop

    def fault_rules_touch_periodic_work(self) -> bool:
        """Whether a rule could touch a client's periodic requests — pulls, offset
        commits, heartbeats, route look-ups — of an existing topic or group (an idle span
        must then run them one by one)."""
        faults = self.faults
        return faults.active and faults.about_periodic_work(
            self.topics.get, lambda g: self.groups.find(g, auto_create=False))

    # -- idle skipping's questions (client_sdk/transport/idle_skip.py) ---------------------------
    # next_held_pull_deadline() -> int | None: when the first held pull's suspend time ends;
    # held_pulls_until(before) -> [HeldPull]: those whose suspend time ends before
    # ``before``, in the order their timeouts would answer them (both the hold service's
    # own methods, bound in __init__: asked on most loop turns, no call added)
    def withdraw_held_pull(self, held: HeldPull) -> None:
        """``held`` waits no more, unanswered: its client takes the answer its expiry would
        bring as given (idle skipping carries an idle span's expiries and the pulls sent
        again after them; the last of those is held anew by ``pull_or_hold``)."""
        self.holds.release(held)

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
                res = self.put_message(rec, DUE_KEPT, group, None, None, 0 if lane == TIMER_LANE else lane,
                                       kept[0].body_crc, now)
            else:
                res = self.put_message(rec, DUE, group, None, None, 0 if lane == TIMER_LANE else lane)
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

    # -- Pulsar non-persistent topics (broker/pulsar_model/non_persistent.py) ----------------
    def check_pulsar_namespace(self, tenant: str, namespace: str) -> None:
        """PulsarAdminError("not_found") when the namespace does not exist."""
        self.pulsar_topics.check_namespace(tenant, namespace)

    def non_persistent_partitions(self, topic: PulsarTopic) -> int:
        return self._non_persistent.partitions(topic)

    def create_non_persistent_partitioned(self, topic: PulsarTopic, partitions: int) -> None:
        """PUT /admin/v2/non-persistent/t/ns/x/partitions (PulsarAdminError when refused)."""
        self._non_persistent.create_partitioned(topic, partitions)

    def create_non_persistent_topic(self, topic: PulsarTopic) -> None:
        """PUT /admin/v2/non-persistent/t/ns/x: loaded now (PulsarAdminError when refused)."""
        self.check_pulsar_namespace(topic.tenant, topic.namespace)
        self._non_persistent.create(topic)

    def delete_non_persistent_topic(self, topic: PulsarTopic, force: bool, *, partitioned: bool) -> None:
        """DELETE .../x (``partitioned``: .../x/partitions), refused while in use unless
        ``force``; the Pulsar front closes the producers and consumers it had (they come
        back and load it again, as after Pulsar deletes a topic with its clients)."""
        names, detached = self._non_persistent.delete(topic, force, partitioned)
        if names:
            self.notify(PulsarTopicsChanged(tuple(names), deleted=True))
        if detached:
            self.notify(PulsarConsumersDetached(tuple(detached)))

    def non_persistent_topics_of(self, tenant: str, namespace: str, *, partitioned: bool = False) -> list[str]:
        """A namespace's loaded non-persistent topics (or its partitioned ones), sorted."""
        nps = self._non_persistent
        return nps.partitioned_topics_of(tenant, namespace) if partitioned else nps.topics_of(tenant, namespace)

    def attach_non_persistent_producer(self, topic: PulsarTopic, name: str) -> bool:
        return self._non_persistent.attach_producer(topic, name)

    def detach_non_persistent_producer(self, topic: str, name: str) -> None:
        self._non_persistent.detach_producer(topic, name)

    def subscribe_non_persistent(self, topic: PulsarTopic, subscription: str, key, sub_type, *, durable: bool = True,
                                 priority: int = 0, name: str = ""):
        return self._non_persistent.subscribe(topic, subscription, key, sub_type, durable=durable, priority=priority,
                                              name=name)

    def leave_non_persistent(self, key) -> None:
        self._non_persistent.leave(key)

    def unsubscribe_non_persistent(self, key):
        return self._non_persistent.unsubscribe(key)

    def flow_non_persistent(self, key, permits: int) -> None:
        self._non_persistent.flow(key, permits)

    def publish_non_persistent(self, topic: str, messages: int, size: int, sticky_key: bytes, ready) -> list:
        """The consumers a message published now goes to (nothing is stored); counted in the
        rates (/metrics, the dashboard) as produced, and as consumed by each subscription
        that got it."""
        delivered = self._non_persistent.publish(topic, messages, size, sticky_key, ready)
        now = self.clock.now_ms()
        self.rates.add(now, PRODUCED, "", topic, messages)
        for _, subscription in delivered:
            self.rates.add(now, CONSUMED, subscription, topic, messages)
        return [key for key, _ in delivered]

    def non_persistent_stats(self, topic: str) -> dict | None:
        return self._non_persistent.stats(topic)

    def non_persistent_consumer_stats(self, key) -> dict | None:
        return self._non_persistent.consumer_stats(key)

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
