"""PushConsumer (RocketMQ's DefaultMQPushConsumer): subscribe, pull, hand messages to a
listener, retry failures the RocketMQ way.

What lives where: pulling and the offset/heartbeat plumbing here; queue allocation in
``rebalance``; the in-flight bookkeeping in ``process_queue``; result handling in
``consume_concurrently`` / ``consume_orderly``. Everything runs as tasks on the
runtime's loop (see ``runtime``), so on a VirtualClock a test drives it with
``advance("10s")`` / ``run_until_idle()``.
"""
from __future__ import annotations

import enum
import logging
import zlib
from itertools import starmap
from dataclasses import dataclass, fields
from typing import Callable

from rocketmq_emulator.broker.fronts.remoting.protocol.typed import pull_header_of
from rocketmq_emulator.broker.operations import PullRequest
from rocketmq_emulator.broker.retry_lifecycle import (DEFAULT_MAX_RECONSUME_TIMES, RETRY_PREFIX,
                                                      rocketmq4_client_fallback, retry_topic)
from rocketmq_emulator.store.records import Prop

from .api import PullStatus
from .client_instance import ClientInstance
from .consume_concurrently import ConsumeMessageConcurrentlyService
from .consume_orderly import ConsumeMessageOrderlyService
from .errors import MQClientError, RemotingError
from .listener import MessageListenerConcurrently, MessageListenerOrderly
from .message import MessageExt, MessageQueue
from .offset_store import LocalOffsetStore, ReadOffsetType, RemoteBrokerOffsetStore
from .process_queue import REBALANCE_LOCK_INTERVAL, ProcessQueue
from .pull_body import DecodedBody, copy_stored, decode_pull_body

# what a pull is, to the broker's fault rules: a pull, and the offset commit it carries
from .producer import CLIENT_INNER_PRODUCER_GROUP, Producer
from .service import ClientService, ServiceState
from .rebalance import Rebalancer
from .subscription import MessageSelector, SubscriptionData
from .validators import check_group, check_topic

__all__ = ["PushConsumer", "MessageModel", "ConsumeFromWhere", "ConsumerStats"]

log = logging.getLogger("client_sdk.consumer")

DEFAULT_CONSUMER_GROUP = "DEFAULT_CONSUMER"
BROKER_SUSPEND_MAX_TIME_MILLIS = 15000
CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND = 30000
PULL_TIME_DELAY_MILLS_WHEN_EXCEPTION = 3000
PULL_TIME_DELAY_MILLS_WHEN_FLOW_CONTROL = 50
OFFSET_ILLEGAL_FIX_DELAY_MS = 10000
MAX_INT = 2 ** 31 - 1


class MessageModel(enum.Enum):
    CLUSTERING = "CLUSTERING"
    BROADCASTING = "BROADCASTING"


_BROADCASTING = MessageModel.BROADCASTING


class ConsumeFromWhere(enum.Enum):
    """Where a group with no stored offset starts. Note RocketMQ 4.x's broker answers
    offset 0 for a queue whose first message is still there, so a brand-new group
    usually starts at the beginning anyway (rocketmq-4x.md §2.6)."""

    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


@dataclass(slots=True)
class ConsumerStats:
    """Counters of what the consumer did (RocketMQ keeps TPS figures; tests want totals)."""

    delivered: int = 0              # messages handed to the listener (repeats included)
    consume_ok: int = 0
    consume_failed: int = 0
    listener_exceptions: int = 0
    bad_listener_results: int = 0
    send_back_ok: int = 0           # CONSUMER_SEND_MSG_BACK accepted
    send_back_failed: int = 0
    fallback_ok: int = 0            # retry copy published by the inner producer
    fallback_failed: int = 0
    local_retries: int = 0          # messages kept for a local re-consume after 5 s
    dropped: int = 0                # BROADCASTING failures dropped
    expired: int = 0                # consume-timeout send-backs
    dead_lettered: int = 0          # orderly messages republished past max reconsume times
    undecodable_records: int = 0    # pulled records skipped because they could not be decoded

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


class _PullRequest:
    __slots__ = ("mq", "pq", "next_offset", "opaque")

    def __init__(self, mq: MessageQueue, pq: ProcessQueue, next_offset: int) -> None:
        self.mq = mq
        self.pq = pq
        self.next_offset = next_offset
        self.opaque = 0           # of the PULL_MESSAGE in flight


class PushConsumer(ClientService):
    """``PushConsumer(group, broker)``; ``subscribe(topic, "*")``;
    ``register_message_listener(fn)``; ``start()``.

    Options (RocketMQ's names in snake_case, same defaults — checklist 78):
    ``message_model`` CLUSTERING, ``consume_from_where`` CONSUME_FROM_LAST_OFFSET,
    ``consume_timestamp`` (ms; default now − 30 min), ``consume_message_batch_max_size`` 1,
    ``pull_batch_size`` 32, ``pull_interval`` 0, ``max_reconsume_times`` −1 (16 concurrently,
    unlimited orderly), ``suspend_current_queue_time_millis`` 1000, ``consume_timeout`` 15
    (minutes), ``pull_threshold_for_queue`` 1000, ``pull_threshold_size_for_queue`` 100 (MiB),
    ``consume_concurrently_max_span`` 2000, ``persist_consumer_offset_interval`` 5000,
    ``heartbeat_broker_interval`` 30000, ``poll_name_server_interval`` 30000,
    ``instance_name``, ``namesrv_addr`` ("host:port": talk TCP to a name server, the consumer
    owning the connection and running its loop in a background thread). ``strict=True`` makes a listener that returns a non-status raise
    ``ListenerResultError`` from the run call (it is still retried, as RocketMQ does).
    """

    def __init__(self, group: str, broker=None, *,
                 message_model: MessageModel | str = MessageModel.CLUSTERING,
                 consume_from_where: ConsumeFromWhere | str = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
                 consume_timestamp: int | None = None,
                 consume_message_batch_max_size: int = 1, pull_batch_size: int = 32, pull_interval: int = 0,
                 max_reconsume_times: int = -1, suspend_current_queue_time_millis: int = 1000,
                 consume_timeout: int = 15, pull_threshold_for_queue: int = 1000,
                 pull_threshold_size_for_queue: int = 100, consume_concurrently_max_span: int = 2000,
                 persist_consumer_offset_interval: int = 5000, heartbeat_broker_interval: int = 30000,
                 poll_name_server_interval: int = 30000, rebalance_interval: int = 20000,
                 instance_name: str | None = None, strict: bool = False,
                 listener: Callable | None = None, orderly: bool | None = None,
                 namesrv_addr: str | None = None) -> None:
        check_group(group, "consumerGroup")
        if group == DEFAULT_CONSUMER_GROUP:
            raise MQClientError(f"consumerGroup can not equal {DEFAULT_CONSUMER_GROUP}, please specify another one.")
        if broker is None and namesrv_addr is None:
            raise MQClientError("PushConsumer needs a broker to connect to (an EmbeddedBroker, InProcessBroker, "
                                "RemoteBroker or Transport) or namesrv_addr='host:port'")
        self.group = group
        # namesrv_addr: a TCP connection this consumer owns, its loop in a background thread.
        self._remote = None
        if namesrv_addr is not None:    # the TCP transport, loaded only for a client that needs it
            from .transport.remote import own_remote_broker
            self._remote = own_remote_broker(broker, namesrv_addr, "PushConsumer")
        self._broker = broker if self._remote is None else self._remote
        self.message_model = _enum(MessageModel, message_model, "message_model")
        self.consume_from_where = _enum(ConsumeFromWhere, consume_from_where, "consume_from_where")
        self.consume_timestamp = consume_timestamp
        _check_range("consume_message_batch_max_size", consume_message_batch_max_size, 1, 1024)
        _check_range("pull_batch_size", pull_batch_size, 1, 1024)
        _check_range("consume_timeout", consume_timeout, 1, 10 ** 9)
        _check_range("pull_threshold_for_queue", pull_threshold_for_queue, 1, 65535)
        _check_range("consume_concurrently_max_span", consume_concurrently_max_span, 1, 65535)
        _check_range("suspend_current_queue_time_millis", suspend_current_queue_time_millis, 0, 10 ** 9)
        if not isinstance(max_reconsume_times, int) or max_reconsume_times < -1:
            raise MQClientError(f"max_reconsume_times must be -1 (default) or >= 0, got {max_reconsume_times!r}")
        self.consume_message_batch_max_size = consume_message_batch_max_size
        self.pull_batch_size = pull_batch_size
        self.pull_interval = pull_interval
        self.max_reconsume_times = max_reconsume_times
        self.suspend_current_queue_time_millis = suspend_current_queue_time_millis
        self.consume_timeout = consume_timeout
        self.pull_threshold_for_queue = pull_threshold_for_queue
        self.pull_threshold_size_for_queue = pull_threshold_size_for_queue
        self.consume_concurrently_max_span = consume_concurrently_max_span
        self.persist_consumer_offset_interval = persist_consumer_offset_interval
        self.heartbeat_broker_interval = heartbeat_broker_interval
        self.poll_name_server_interval = poll_name_server_interval
        self.rebalance_interval = rebalance_interval
        self.instance_name = instance_name
        self.strict = strict
        self.retry_topic = retry_topic(group)
        self.subscriptions: dict[str, SubscriptionData] = {}
        self.stats = ConsumerStats()
        self.state = ServiceState.CREATE_JUST
        self.instance: ClientInstance | None = None
        self.runtime = None
        self.offset_store = None
        self.consume_service = None
        self.inner_producer: Producer | None = None
        self.rebalancer = Rebalancer(self)
        self._listener = None
        self._orderly = False
        self._timers = []
        self.warned_no_route: set[str] = set()
        # Each assigned queue's one pull request (made per assignment, reused for every
        # pull of it): the idle skipper finds a held pull's consumer state here.
        self.pull_requests: dict[MessageQueue, _PullRequest] = {}
        if listener is not None:
            self.register_message_listener(listener, orderly=orderly)

    # -- configuration ---------------------------------------------------------------------
    @property
    def broadcasting(self) -> bool:
        return self.message_model is MessageModel.BROADCASTING

    @property
    def orderly(self) -> bool:
        return self._orderly

    @property
    def max_reconsume_times_concurrently(self) -> int:
        """getMaxReconsumeTimes: −1 means 16."""
        return 16 if self.max_reconsume_times == -1 else self.max_reconsume_times

    @property
    def max_reconsume_times_orderly(self) -> int:
        """Orderly: −1 means Integer.MAX_VALUE (retry forever)."""
        return MAX_INT if self.max_reconsume_times == -1 else self.max_reconsume_times

    def subscribe(self, topic: str, expression: "str | MessageSelector | None" = "*") -> "PushConsumer":
        """Subscribe to ``topic`` with a tag expression (``"*"``, ``"TagA || TagB"``) or a
        ``MessageSelector`` (``MessageSelector.by_sql("region = 'eu' AND amount > 100")``)."""
        check_topic(topic)
        now = self._now_for_sub_version()
        self.subscriptions[topic] = SubscriptionData.build(topic, expression, now)
        if self.state is ServiceState.RUNNING:
            self.instance.send_heartbeat()
            self.runtime.call_soon(self.do_rebalance)
        return self

    def unsubscribe(self, topic: str) -> None:
        self.subscriptions.pop(topic, None)
        if self.state is ServiceState.RUNNING:
            self.instance.send_heartbeat()
            self.runtime.call_soon(self.do_rebalance)

    def _now_for_sub_version(self) -> int:
        if self.runtime is not None:
            return self.runtime.clock.now_ms()
        rt = getattr(self._broker, "runtime", None)
        return rt.clock.now_ms() if rt is not None else 0

    def register_message_listener(self, listener, orderly: bool | None = None) -> None:
        """A function ``(msgs, context) -> status`` or a MessageListenerConcurrently /
        MessageListenerOrderly. ``orderly=True`` makes a plain function orderly."""
        if self.state is not ServiceState.CREATE_JUST:
            raise MQClientError("register the message listener before start()")
        if isinstance(listener, MessageListenerOrderly):
            fn, is_orderly = listener.consume_message, True
        elif isinstance(listener, MessageListenerConcurrently):
            fn, is_orderly = listener.consume_message, False
        elif callable(listener):
            fn = listener
            is_orderly = bool(getattr(listener, "orderly", False))
        else:
            raise MQClientError(f"the message listener must be callable or a MessageListenerConcurrently/"
                                f"MessageListenerOrderly, not {type(listener).__name__}")
        if orderly is not None:
            if isinstance(listener, (MessageListenerOrderly, MessageListenerConcurrently)) and orderly != is_orderly:
                raise MQClientError(f"orderly={orderly} contradicts the listener type {type(listener).__name__}")
            is_orderly = orderly
        self._listener = fn
        self._orderly = is_orderly

    def register_message_listener_orderly(self, listener) -> None:
        self.register_message_listener(listener, orderly=True)

    # -- lifecycle (start, shutdown, close, with: service.ClientService) ----------------------
    _kind = "PushConsumer"

    def _check_startable(self) -> None:
        if self._listener is None:
            raise MQClientError("messageListener is null: call register_message_listener(...) before start()")
        if not self.subscriptions:
            raise MQClientError(f"consumer group {self.group} has no subscription: call subscribe(topic, '*') "
                                f"before start()")

    def _start_failed(self) -> None:
        if self.instance is not None:
            self.instance.shutdown()

    def _start(self) -> None:
        inst = self.instance = ClientInstance(
            self._broker, instance_name=self.instance_name,
            heartbeat_interval_ms=self.heartbeat_broker_interval,
            poll_name_server_interval_ms=self.poll_name_server_interval,
            persist_offset_interval_ms=self.persist_consumer_offset_interval,
            rebalance_interval_ms=self.rebalance_interval)
        self.runtime = inst.runtime
        if self.consume_timestamp is None:
            self.consume_timestamp = self.runtime.clock.now_ms() - 30 * 60000
        if not self.broadcasting:
            # copySubscription: a clustering consumer also consumes its retry topic (checklist 77).
            self.subscriptions.setdefault(self.retry_topic, SubscriptionData.build(
                self.retry_topic, "*", self.runtime.clock.now_ms()))
        self.offset_store = LocalOffsetStore() if self.broadcasting else RemoteBrokerOffsetStore(inst.api, self.group)
        if self._orderly:
            self.consume_service = ConsumeMessageOrderlyService(self, self._listener)
        else:
            self.consume_service = ConsumeMessageConcurrentlyService(self, self._listener)
        inst.register_consumer(self.group, self)
        self.inner_producer = Producer(CLIENT_INNER_PRODUCER_GROUP, instance=inst)
        self.inner_producer.start()
        inst.start()
        inst.send_heartbeat()   # first: it creates %RETRY%<group> on the broker
        for topic in self.subscriptions:
            inst.get_route(topic, refresh=True)
        for sub in self.subscriptions.values():     # checkClientInBroker: a SQL92 subscription the broker refuses
            if sub.expression_type != "TAG":       # fails the start, with the broker's code and remark
                inst.api.check_client_config(self.group, inst.client_id, sub.to_json())
        rt = self.runtime
        if self._orderly:
            if not self.broadcasting:
                self._timers.append(rt.call_every(REBALANCE_LOCK_INTERVAL, self._guarded, self.lock_all,
                                                  first_delay_ms=1000, quiet=("locks", self)))
        else:
            self._timers.append(rt.call_every(self.consume_timeout * 60000, self._guarded, self._clean_expired,
                                              quiet=("clean", self)))
        rt.call_soon(self.do_rebalance)   # rebalanceImmediately

    def _shutdown(self) -> None:
        for t in self._timers:
            t.cancel()
        inst = self.instance
        try:
            self.persist_offsets()
            if self._orderly and not self.broadcasting and self.process_queues:
                inst.api.unlock_batch_mq(self.group, inst.client_id, list(self.process_queues))
        except (MQClientError, RemotingError) as exc:
            log.warning("%s: shutdown could not persist offsets / unlock: %s", self.group, exc)
        self.rebalancer.drop_all()
        inst.unregister(producer_group=CLIENT_INNER_PRODUCER_GROUP, consumer_group=self.group)
        inst.shutdown()

    def _guarded(self, fn) -> None:
        if self.state is not ServiceState.RUNNING:
            return
        try:
            fn()
        except (MQClientError, RemotingError) as exc:
            log.warning("%s: %s failed: %s", self.group, getattr(fn, "__name__", fn), exc)

    def report_error(self, exc: BaseException) -> None:
        """Hand an error to the runtime: raised from the current run call."""
        self.runtime._errors.append(exc)

    # -- views ---------------------------------------------------------------------------------
    @property
    def client_id(self) -> str | None:
        return self.instance.client_id if self.instance else None

    @property
    def process_queues(self) -> dict[MessageQueue, ProcessQueue]:
        return self.rebalancer.process_queue_table

    def assigned_queues(self, topic: str | None = None) -> list[MessageQueue]:
        """The queues this consumer currently pulls, sorted."""
        return sorted(mq for mq in self.process_queues if topic is None or mq.topic == topic)

    def now_ms(self) -> int:
        return self.runtime.clock.now_ms()

    def consumer_data(self) -> dict:
        """ConsumerData of the heartbeat (§2.7)."""
        return {"groupName": self.group, "consumeType": "CONSUME_PASSIVELY",
                "messageModel": self.message_model.value, "consumeFromWhere": self.consume_from_where.value,
                "unitMode": False,
                "subscriptionDataSet": [s.to_json() for _, s in sorted(self.subscriptions.items())]}

    # -- rebalance and offsets --------------------------------------------------------------------
    def do_rebalance(self) -> None:
        if self.state is ServiceState.RUNNING:
            self.rebalancer.do_rebalance()

    def reset_offsets(self, offsets: dict[MessageQueue, int]) -> None:
        """RESET_CONSUMER_CLIENT_OFFSET (the Java client's resetOffset, ``mqadmin
        resetOffsetByTime``): what is in flight from those queues is dropped, the new
        offsets are set and committed, and a rebalance starts pulling from them."""
        if self.state is not ServiceState.RUNNING or self.offset_store is None:
            return
        table = self.rebalancer.process_queue_table
        for mq in offsets:
            pq = table.get(mq)
            if pq is not None:
                pq.dropped = True
                pq.clear()
        for mq, offset in offsets.items():
            self.offset_store.update(mq, offset, False)
            self.offset_store.persist(mq)
            table.pop(mq, None)
            self.offset_store.remove(mq)
        self.rebalancer.do_rebalance()

    def persist_offsets(self) -> None:
        if self.offset_store is not None:
            self.offset_store.persist_all(list(self.process_queues))

    def compute_pull_from_where(self, mq: MessageQueue) -> int:
        """RebalancePushImpl.computePullFromWhere (rocketmq-4x.md §2.6)."""
        last = self.offset_store.read(mq, ReadOffsetType.READ_FROM_STORE)
        if last >= 0:
            return last
        if last != -1:
            return -1
        api = self.instance.api
        cfw = self.consume_from_where
        is_retry = mq.topic.startswith(RETRY_PREFIX)
        try:
            if cfw is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
                return 0
            if cfw is ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET:
                return 0 if is_retry else api.get_max_offset(mq.topic, mq.queue_id, mq.broker_name)
            if is_retry:
                return api.get_max_offset(mq.topic, mq.queue_id, mq.broker_name)
            return api.search_offset(mq.topic, mq.queue_id, self.consume_timestamp, mq.broker_name)
        except (MQClientError, RemotingError) as exc:
            log.warning("%s: cannot compute the start offset of %s: %s", self.group, mq, exc)
            return -1

    def lock_one(self, mq: MessageQueue) -> bool:
        inst = self.instance
        try:
            ok = mq in inst.api.lock_batch_mq(self.group, inst.client_id, [mq])
        except (MQClientError, RemotingError) as exc:
            log.warning("%s: lock of %s failed: %s", self.group, mq, exc)
            return False
        pq = self.process_queues.get(mq)
        if pq is not None and ok:
            pq.locked = True
            pq.last_lock_timestamp = self.now_ms()
        return ok

    def lock_all(self) -> None:
        """Renew the broker locks of every orderly queue (every 20 s)."""
        mqs = list(self.process_queues)
        if not mqs:
            return
        inst = self.instance
        ok = inst.api.lock_batch_mq(self.group, inst.client_id, mqs)
        now = self.now_ms()
        for mq in mqs:
            pq = self.process_queues.get(mq)
            if pq is None:
                continue
            if mq in ok:
                pq.locked = True
                pq.last_lock_timestamp = now
            else:
                pq.locked = False

    def _clean_expired(self) -> None:
        self.consume_service.clean_expired(self.now_ms())

    # -- pulling --------------------------------------------------------------------------------------
    def start_pulling(self, mq: MessageQueue, pq: ProcessQueue, next_offset: int) -> None:
        pr = self.pull_requests[mq] = _PullRequest(mq, pq, next_offset)
        self.runtime.call_soon(self._pull, pr)

    def _pull_later(self, pr: _PullRequest, delay_ms: int) -> None:
        self.runtime.call_later(delay_ms, self._pull, pr)

    def _pull(self, pr: _PullRequest) -> None:
        """DefaultMQPushConsumerImpl.pullMessage."""
        pq = pr.pq
        if pq.dropped or self.state is not ServiceState.RUNNING:
            return
        pq.last_pull_timestamp = now = self.runtime.clock.now_ms()
        if pq.msg_count > self.pull_threshold_for_queue or \
                pq.msg_size > self.pull_threshold_size_for_queue * 1024 * 1024:
            self._pull_later(pr, PULL_TIME_DELAY_MILLS_WHEN_FLOW_CONTROL)
            return
        if not self._orderly:
            if pq.max_span > self.consume_concurrently_max_span:
                self._pull_later(pr, PULL_TIME_DELAY_MILLS_WHEN_FLOW_CONTROL)
                return
        elif not self.broadcasting and not pq.locked:
            self._pull_later(pr, PULL_TIME_DELAY_MILLS_WHEN_EXCEPTION)
            return
        subscriptions, topic = self.subscriptions, pr.mq.topic     # (``in`` and ``[]``: every pull)
        sub = subscriptions[topic] if topic in subscriptions else None
        if sub is None:
            self._pull_later(pr, PULL_TIME_DELAY_MILLS_WHEN_EXCEPTION)
            return
        api = self.instance.api
        if api.transport.core() is not None:        # in process: a typed pull (fault rules: the broker's door)
            pr.opaque = api.pull_typed(self.pull_request(pr, sub), BROKER_SUSPEND_MAX_TIME_MILLIS,
                                       lambda resp, err: self._on_pull(pr, sub, resp, err),
                                       CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND)
            return
        pr.opaque = api.pull_message_async(
            self.pull_header(pr, sub), lambda resp, err: self._on_pull(pr, sub, resp, err),
            CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND)

    def pull_request(self, pr: _PullRequest, sub: SubscriptionData) -> PullRequest:
        """``pr``'s pull now, the one request every transport carries (the wire's header:
        ``pull_header``): no subscription sent along, the offset commit piggy-backed
        when there is one."""
        mq = pr.mq
        commit_offset = None
        if self.message_model is not _BROADCASTING:     # (self.broadcasting: every pull)
            table = self.offset_store.table
            if mq in table and table[mq] > 0:
                commit_offset = table[mq]
        # positional, in PullRequest's field order (group, topic, queue_id, offset,
        # max_msgs, subscription, expression_type, sub_version, commit_offset)
        return PullRequest(self.group, mq.topic, mq.queue_id, pr.next_offset, self.pull_batch_size, None,
                           sub.expression_type, sub.sub_version, commit_offset)

    def pull_header(self, pr: _PullRequest, sub: SubscriptionData) -> dict:
        """PullMessageRequestHeader of ``pull_request`` (the real codec's encoding)."""
        return pull_header_of(self.pull_request(pr, sub), BROKER_SUSPEND_MAX_TIME_MILLIS, pr.mq.broker_name)

    def _on_pull(self, pr: _PullRequest, sub: SubscriptionData, resp, err) -> None:
        pq = pr.pq
        if pq.dropped or self.state is not ServiceState.RUNNING:
            return
        if err is not None:
            log.warning("%s: pull of %s failed: %s; retrying in 3 s", self.group, pr.mq, err)
            self._pull_later(pr, PULL_TIME_DELAY_MILLS_WHEN_EXCEPTION)
            return
        status = resp.status
        if status is PullStatus.FOUND:
            msgs = self._decode(pr, resp, sub)
            if msgs:
                dispatch = pq.put_messages(msgs)
                self.consume_service.submit(msgs, pq, pr.mq, dispatch)
            if self.pull_interval > 0:
                self._pull_later(pr, self.pull_interval)
            else:
                self._pull(pr)
        elif status is PullStatus.NO_NEW_MSG or status is PullStatus.NO_MATCHED_MSG:
            pr.next_offset = resp.next_begin_offset
            if pq.msg_count == 0:
                # correctTagsOffset: nothing in flight, so everything up to here is settled.
                self.offset_store.update(pr.mq, pr.next_offset, True)
            self._pull(pr)
        else:  # OFFSET_ILLEGAL
            log.warning("%s: the pull offset of %s is illegal, next begin offset %d", self.group, pr.mq,
                        resp.next_begin_offset)
            pr.next_offset = resp.next_begin_offset
            pq.dropped = True
            self.runtime.call_later(OFFSET_ILLEGAL_FIX_DELAY_MS, self._fix_illegal_offset, pr)

    def _fix_illegal_offset(self, pr: _PullRequest) -> None:
        if self.state is not ServiceState.RUNNING:
            return
        self.offset_store.update(pr.mq, pr.next_offset, False)
        self.offset_store.persist(pr.mq)
        table = self.process_queues
        if table.get(pr.mq) is pr.pq:
            del table[pr.mq]
        self.runtime.call_soon(self.do_rebalance)

    def _decode(self, pr: _PullRequest, resp, sub: SubscriptionData) -> list:
        """processPullResult: decode, inflate, re-filter by tag, add MIN/MAX_OFFSET, and
        set where the next pull starts. A record that cannot be decoded is skipped with
        an error logged (see pull_body); the queue goes on past it. In process the
        records may come as the broker keeps them: each is copied (``copy_stored``),
        nothing to decode."""
        records = None
        stored = resp.stored
        if stored is not None:
            try:
                records = list(starmap(copy_stored, stored))    # (no list comprehension's call: every pull)
            except zlib.error:              # a body that does not inflate: decoded, to be reported
                records = None
                resp.body = b"".join(resp.raw)
        if records is not None:
            pr.next_offset = resp.next_begin_offset
        else:
            decoded = decode_pull_body(resp.body, pr.next_offset, resp.next_begin_offset)
            if decoded.damaged:
                self._report_damage(pr, decoded)
                pr.next_offset = resp.next_begin_offset if decoded.resume_offset is None else decoded.resume_offset
            else:
                pr.next_offset = resp.next_begin_offset
            records = decoded.records
        tags = sub.tags_set
        min_s = str(resp.min_offset)
        max_s = str(resp.max_offset)
        out = []
        append = out.append
        for rec in records:
            props = rec.properties
            if tags and props.get(Prop.TAGS) not in tags:
                continue
            props[Prop.MIN_OFFSET] = min_s
            props[Prop.MAX_OFFSET] = max_s
            rec.__class__ = MessageExt   # same slots: no copy (MessageExt.adopt)
            append(rec)
        return out

    def _report_damage(self, pr: _PullRequest, decoded: DecodedBody) -> None:
        self.stats.undecodable_records += len(decoded.damaged)
        for bad in decoded.damaged:
            where = f"offset {bad.queue_offset}" if bad.queue_offset is not None else "an unreadable offset"
            log.error("%s: skipped an undecodable record of %s at %s (%s)%s", self.group, pr.mq, where, bad.reason,
                      f"; pulling again from offset {decoded.resume_offset}"
                      if decoded.resume_offset is not None and bad is decoded.damaged[-1] else "")

    # -- retries -----------------------------------------------------------------------------------
    def send_message_back(self, msg: MessageExt, delay_level: int = 0, broker_name: str | None = None) -> bool:
        """sendMessageBack: CONSUMER_SEND_MSG_BACK, else the inner producer's copy to
        %RETRY%<group>. True when either worked."""
        props = msg.properties
        # (msg.msg_id, inlined: every failed delivery)
        msg_id = (props[Prop.UNIQ_KEY] if Prop.UNIQ_KEY in props else None) or msg.offset_msg_id
        try:
            self.instance.api.consumer_send_msg_back(
                commit_log_offset=msg.commit_log_offset, group=self.group, delay_level=delay_level,
                origin_msg_id=msg_id, origin_topic=msg.topic,
                max_reconsume_times=(DEFAULT_MAX_RECONSUME_TIMES if self.max_reconsume_times == -1
                                     else self.max_reconsume_times),
                broker_name=broker_name)         # (max_reconsume_times_concurrently, inlined)
            self.stats.send_back_ok += 1
            return True
        except (MQClientError, RemotingError) as exc:
            self.stats.send_back_failed += 1
            log.warning("%s: send message back failed (%s); publishing the retry copy directly", self.group, exc)
        return self.send_back_as_normal_message(msg)

    def send_back_as_normal_message(self, msg: MessageExt, reconsume_time: int | None = None) -> bool:
        """The fallback (sendMessageBackAsNormalMessage, checklist 75): publish a copy to
        %RETRY%<group> with DELAY = 3 + reconsumeTimes, RECONSUME_TIME,
        MAX_RECONSUME_TIMES, RETRY_TOPIC and ORIGIN_MESSAGE_ID through the inner producer
        (group CLIENT_INNER_PRODUCER). Orderly passes RECONSUME_TIME = reconsumeTimes
        (4.9.8), so the broker dead-letters it once the maximum is reached."""
        max_times = self.max_reconsume_times_concurrently if reconsume_time is None else \
            self.max_reconsume_times_orderly
        copy = rocketmq4_client_fallback(self.group, msg.properties, msg.topic, msg.msg_id, msg.reconsume_times,
                                         max_times, reconsume_time)
        try:
            self.inner_producer.send_raw(copy.topic, msg.body, msg.flag, copy.properties)
        except (MQClientError, RemotingError) as exc:
            self.stats.fallback_failed += 1
            log.warning("%s: publishing the retry copy of %s failed too: %s", self.group, msg.msg_id, exc)
            return False
        self.stats.fallback_ok += 1
        return True

    def __repr__(self) -> str:
        kind = "orderly" if self._orderly else "concurrently"
        return f"PushConsumer({self.group!r}, {self.message_model.value}, {kind}, {self.state.value})"


def _enum(cls, value, name):
    if isinstance(value, cls):
        return value
    try:
        return cls(value)
    except ValueError:
        raise MQClientError(f"{name} must be one of {[m.value for m in cls]}, got {value!r}") from None


def _check_range(name: str, value, lo: int, hi: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise MQClientError(f"{name} out of range [{lo}, {hi}]: {value!r}")
