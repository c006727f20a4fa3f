"""Producer: synchronous sends over SEND_MESSAGE_V2 (RocketMQ's DefaultMQProducer).

Route lookup via GET_ROUTEINFO_BY_TOPIC, falling back to the TBW102 template route for
a topic the broker will auto-create; round-robin queue selection; up to
``retry_times_when_send_failed`` retries on another queue for the errors the Java client
retries; UNIQ_KEY message ids from the runtime's generator (checklist 48).
"""
from __future__ import annotations

import logging
import zlib
from typing import Callable

from rocketmq_emulator.broker.fronts.remoting.protocol import ResponseCode
from rocketmq_emulator.broker.operations import SendRequest
from rocketmq_emulator.broker.fronts.remoting.protocol.typed import send_code, send_header_of
from rocketmq_emulator.broker.fronts.remoting.protocol.batch import encode_batch_body
from rocketmq_emulator.broker.retry_lifecycle import RETRY_PREFIX
from rocketmq_emulator.store.records import Prop, SysFlag, properties_to_string

from .client_instance import ClientInstance
from .errors import MQBrokerError, MQClientError, RemotingError
from .message import Message, MessageQueue, SendResult, SendStatus
from .route import TopicRoute
from .service import ClientService, ServiceState
from .validators import MAX_MESSAGE_SIZE, check_group, check_message

__all__ = ["Producer", "ServiceState", "CLIENT_INNER_PRODUCER_GROUP", "DEFAULT_PRODUCER_GROUP"]

log = logging.getLogger("client_sdk.producer")

CLIENT_INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"
DEFAULT_PRODUCER_GROUP = "DEFAULT_PRODUCER"
AUTO_CREATE_TOPIC_KEY = "TBW102"
FAQ = "See http://rocketmq.apache.org/docs/faq/ for further details."

# Broker codes after which sendDefaultImpl tries another queue (DefaultMQProducer.retryResponseCodes).
_RETRY_CODES = frozenset({ResponseCode.TOPIC_NOT_EXIST, ResponseCode.SERVICE_NOT_AVAILABLE,
                          ResponseCode.SYSTEM_ERROR, ResponseCode.NO_PERMISSION, 205, 206})
_STORED_STATUS = {ResponseCode.SUCCESS: SendStatus.SEND_OK,
                  ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
                  ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
                  ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE}


class Producer(ClientService):
    """``Producer(group, broker)``; ``start()``; ``send(Message(...)) -> SendResult``.

    ``broker`` is an ``EmbeddedBroker`` / ``InProcessBroker`` / ``RemoteBroker`` /
    Transport; or give ``namesrv_addr="127.0.0.1:9876"`` to talk TCP to a name server,
    the producer owning the connection and a background loop. Options keep
    RocketMQ's names in snake_case: ``send_msg_timeout`` (3000 ms),
    ``retry_times_when_send_failed`` (2), ``default_topic_queue_nums`` (4),
    ``create_topic_key`` ("TBW102"), ``compress_msg_body_over_howmuch`` (4096),
    ``max_message_size`` (4 MiB), ``instance_name``; ``transaction_checker(msg) ->
    LocalTransactionState`` answers the broker's check-backs of this group's
    transactions (``send_message_in_transaction``; client_sdk/transaction.py).
    """

    def __init__(self, group: str, broker=None, *, instance: ClientInstance | None = None,
                 send_msg_timeout: int = 3000, retry_times_when_send_failed: int = 2,
                 default_topic_queue_nums: int = 4, create_topic_key: str = AUTO_CREATE_TOPIC_KEY,
                 compress_msg_body_over_howmuch: int = 4096, max_message_size: int = MAX_MESSAGE_SIZE,
                 instance_name: str | None = None, namesrv_addr: str | None = None,
                 transaction_checker: Callable | None = None) -> None:
        inner = instance is not None and group == CLIENT_INNER_PRODUCER_GROUP
        if not inner:
            check_group(group, "producerGroup")
            if group in (DEFAULT_PRODUCER_GROUP, CLIENT_INNER_PRODUCER_GROUP):
                raise MQClientError(f"producerGroup can not equal {group}, please specify another one.")
        if instance is None and broker is None and namesrv_addr is None:
            raise MQClientError("Producer needs a broker to connect to (an EmbeddedBroker, InProcessBroker, "
                                "RemoteBroker or Transport) or namesrv_addr='host:port'")
        if retry_times_when_send_failed < 0:
            raise MQClientError("retry_times_when_send_failed must be >= 0")
        self.group = group
        # namesrv_addr: a TCP connection this producer owns, its loop in a background thread.
        self._remote = None
        if namesrv_addr is not None:    # the TCP transport, loaded only for a client that needs it
            from .transport.remote import own_remote_broker
            self._remote = own_remote_broker(broker, namesrv_addr, "Producer")
        self._broker = broker if self._remote is None else self._remote
        self._instance = instance
        self._own_instance = instance is None
        self._instance_name = instance_name
        self.send_msg_timeout = send_msg_timeout
        self.retry_times_when_send_failed = retry_times_when_send_failed
        self.default_topic_queue_nums = default_topic_queue_nums
        self.create_topic_key = create_topic_key
        self.compress_msg_body_over_howmuch = compress_msg_body_over_howmuch
        self.max_message_size = max_message_size
        self.transaction_checker = transaction_checker
        self._queue_nums_s = str(default_topic_queue_nums)
        self.state = ServiceState.CREATE_JUST
        self._publish: dict[str, TopicRoute] = {}
        self._send_which_queue = 0
        self._valid_topics: set[str] = set()   # topics that passed check_topic (checked once)

    # -- lifecycle (start, shutdown, close, with: service.ClientService) ----------------
    _kind = "producer"
    _start_errors = (MQClientError, RemotingError)

    def _start(self) -> None:
        if self._instance is None:
            self._instance = ClientInstance(self._broker, instance_name=self._instance_name)
        self._instance.register_producer(self.group, self)
        if self._own_instance:
            self._instance.start()
            self._instance.send_heartbeat()

    def _shutdown(self) -> None:
        inst = self._instance
        if inst is not None and self._own_instance:
            inst.unregister(producer_group=self.group)
            inst.shutdown()

    @property
    def client_id(self) -> str | None:
        return self._instance.client_id if self._instance else None

    def _make_sure_ok(self) -> None:
        if self.state is not ServiceState.RUNNING:
            hint = {ServiceState.CREATE_JUST: "call start() first",
                    ServiceState.SHUTDOWN_ALREADY: "it was shut down; create a new producer",
                    ServiceState.START_FAILED: "its start failed"}[self.state]
            raise MQClientError(f"The producer service state not OK, {self.state.value}: producer "
                                f"'{self.group}' cannot send ({hint})")

    # -- routes ----------------------------------------------------------------------------
    def publish_queues(self, topic: str) -> tuple[MessageQueue, ...]:
        """The writable queues of ``topic`` (fetchPublishMessageQueues)."""
        self._make_sure_ok()
        return self._find_publish_route(topic).publish_queues

    def _find_publish_route(self, topic: str) -> TopicRoute:
        route = self._publish.get(topic)
        if route is not None and route.publish_queues:
            return route
        inst = self._instance
        route = inst.get_route(topic, refresh=True)
        if route is None or not route.publish_queues:
            template = inst.get_route(self.create_topic_key, refresh=True) if route is None else None
            if template is not None and template.publish_queues:
                route = template.with_topic(topic, self.default_topic_queue_nums)
        if route is None or not route.publish_queues:
            why = "no writable queue (is the broker or topic read-only?)" if route is not None else "unknown topic"
            raise MQClientError(f"No route info of this topic: {topic} ({why})\n{FAQ}")
        self._publish[topic] = route
        return route

    def _select_queue(self, queues, last_broker: str | None) -> MessageQueue:
        n = len(queues)
        for _ in range(n):
            i = self._send_which_queue
            self._send_which_queue = i + 1
            mq = queues[i % n]
            if mq.broker_name != last_broker:
                return mq
        i = self._send_which_queue
        self._send_which_queue = i + 1
        return queues[i % n]

    # -- sending ------------------------------------------------------------------------------
    def send(self, msg: Message, queue: MessageQueue | None = None, *,
             selector: Callable[[list[MessageQueue], Message, object], MessageQueue] | None = None,
             arg: object = None, timeout_ms: int | None = None) -> SendResult:
        """Send synchronously; returns a SendResult or raises MQClientError / MQBrokerError.

        ``queue`` sends to that queue; ``selector(queues, msg, arg)`` picks one
        (MessageQueueSelector, e.g. by order id for orderly consumers). Neither retries
        on failure; the default round robin does, on another queue."""
        if self.state is not ServiceState.RUNNING:
            self._make_sure_ok()
        body = check_message(msg, self.max_message_size, self._valid_topics)
        timeout = self.send_msg_timeout if timeout_ms is None else timeout_ms
        props = msg.wire_properties()
        if queue is not None or selector is not None:
            if queue is None:
                queues = list(self._find_publish_route(msg.topic).publish_queues)
                queue = selector(queues, msg, arg)
                if not isinstance(queue, MessageQueue):
                    raise MQClientError(f"the queue selector returned {queue!r}, not a MessageQueue")
            elif queue.topic != msg.topic:
                raise MQClientError(f"message topic [{msg.topic}] is not equal with message queue topic "
                                    f"[{queue.topic}]")
            return self._send_kernel(msg.topic, body, msg.flag, props, queue, timeout)
        return self._send_default(msg.topic, body, msg.flag, props, timeout)

    def send_batch(self, msgs: list[Message], queue: MessageQueue | None = None, *,
                   timeout_ms: int | None = None) -> SendResult:
        """Send several messages of one topic in one SEND_BATCH_MESSAGE (RocketMQ's
        ``send(Collection<Message>)``): all land in one queue, in order. No delay levels,
        no retry topics, at most ``max_message_size`` bytes in all. ``msg_id`` of the
        result is the comma-joined UNIQ_KEYs, ``offset_msg_id`` the comma-joined broker
        ids, ``queue_offset`` the first message's offset."""
        if self.state is not ServiceState.RUNNING:
            self._make_sure_ok()
        if not msgs:
            raise MQClientError("a batch needs at least one message")
        topic = msgs[0].topic if isinstance(msgs[0], Message) else None
        wait = msgs[0].wait_store_msg_ok if topic else True
        clock = self._instance.runtime.clock
        next_id = self._instance.runtime.uniq_keys.next_id
        parts, ids, total = [], [], 0
        for m in msgs:
            body = check_message(m, self.max_message_size, self._valid_topics)
            if m.topic != topic:
                raise MQClientError("The topic of the messages in one batch should be the same")
            if m.topic.startswith(RETRY_PREFIX):
                raise MQClientError("Retry Group is not supported for batching")
            if m.delay_time_level:
                raise MQClientError("TimeDelayLevel is not supported for batching")
            if m.wait_store_msg_ok != wait:
                raise MQClientError("The waitStoreMsgOK of the messages in one batch should the same")
            props = m.wire_properties()
            del props[Prop.WAIT]                      # a batch-level property
            uniq = props.get(Prop.UNIQ_KEY) or next_id(clock.now_ms())
            props[Prop.UNIQ_KEY] = uniq
            ids.append(uniq)
            total += len(body)
            parts.append((m.flag, body, properties_to_string(props)))
        if total > self.max_message_size:
            raise MQClientError(f"the batch body size {total} is over the max value {self.max_message_size}")
        body = encode_batch_body(parts)
        mq = queue or self._select_queue(self._find_publish_route(topic).publish_queues, None)
        ext = {"a": self.group, "b": topic, "c": self.create_topic_key, "d": self._queue_nums_s,
               "e": str(mq.queue_id), "f": "0", "g": str(clock.now_ms()), "h": "0",
               "i": properties_to_string({Prop.WAIT: "true" if wait else "false"}), "j": "0", "k": "false",
               "m": "true", "n": mq.broker_name}
        resp = self._instance.api.send_batch_message(ext, body, self.send_msg_timeout if timeout_ms is None
                                                     else timeout_ms)
        status = _STORED_STATUS.get(resp.code)
        if status is None:
            raise MQBrokerError(resp.code, resp.remark, None, f"SEND_BATCH_MESSAGE {topic}")
        ext = resp.ext_fields or {}
        return SendResult(status, ",".join(ids), ext.get("msgId", ""), mq, int(ext.get("queueOffset", -1)),
                          ext.get("MSG_REGION", "DefaultRegion"), ext.get("TRACE_ON") == "true")

    def send_message_in_transaction(self, msg: Message, local_transaction: Callable, arg: object = None):
        """Send ``msg`` as a transaction's half message, then run
        ``local_transaction(msg, arg) -> LocalTransactionState`` and end the transaction
        with its answer (UNKNOW: the broker checks back with ``transaction_checker``).
        Returns a TransactionSendResult (client_sdk/transaction.py)."""
        from .transaction import send_in_transaction

        if self.state is not ServiceState.RUNNING:
            self._make_sure_ok()
        if not callable(local_transaction):
            raise MQClientError("send_message_in_transaction needs the local transaction: a callable "
                                "(msg, arg) -> LocalTransactionState")
        body = check_message(msg, self.max_message_size, self._valid_topics)
        return send_in_transaction(self, msg.topic, body, msg.flag, msg.wire_properties(), local_transaction,
                                   msg, arg)

    def end_transaction_oneway(self, cmd) -> None:
        """END_TRANSACTION to the broker, oneway (as the Java client sends it)."""
        self._instance.api.transport.oneway(cmd)

    def check_transaction_state(self, cmd, msg) -> None:
        """The broker's CHECK_TRANSACTION_STATE of one of this group's transactions."""
        from .transaction import answer_check

        answer_check(self, cmd, msg)

    def send_raw(self, topic: str, body: bytes, flag: int, properties: dict[str, str],
                 timeout_ms: int | None = None) -> SendResult:
        """Send with a ready property map, system properties included (the consumer's
        inner producer uses this for retry copies). No validation beyond the state."""
        self._make_sure_ok()
        return self._send_default(topic, body, flag, dict(properties),
                                  self.send_msg_timeout if timeout_ms is None else timeout_ms)

    def _send_default(self, topic: str, body: bytes, flag: int, props: dict, timeout: int) -> SendResult:
        route = self._find_publish_route(topic)
        attempts = 1 + self.retry_times_when_send_failed
        last_error: Exception | None = None
        last_broker = None
        tries = 0
        for _ in range(attempts):
            tries += 1
            mq = self._select_queue(route.publish_queues, last_broker)
            try:
                return self._send_kernel(topic, body, flag, props, mq, timeout)
            except MQBrokerError as exc:
                if exc.code not in _RETRY_CODES:
                    raise
                last_error = exc
            except (RemotingError, MQClientError) as exc:
                last_error = exc
            last_broker = mq.broker_name
            self._publish.pop(topic, None)   # the route may be stale: re-fetch it
            try:
                route = self._find_publish_route(topic)
            except MQClientError as exc:
                last_error.add_note(str(exc))
                break
        assert last_error is not None
        last_error.add_note(f"Send [{tries}] times, still failed; topic: {topic}, producer: {self.group}")
        raise last_error

    def _send_kernel(self, topic: str, body: bytes, flag: int, props: dict, mq: MessageQueue,
                     timeout_ms: int) -> SendResult:
        api = self._instance.api
        core = api.transport.core()
        if core is not None:                 # in process: the core's typed send, no command
            req, uniq = self._typed_request(topic, body, flag, props, mq)
            return self._typed_result(core, api.transport.send(req), topic, mq, uniq)
        ext, body, uniq = self._send_request(topic, body, flag, props, mq)
        return self._send_result(api.send_message_v2(ext, body, timeout_ms), topic, mq, uniq)

    def _prepare(self, body: bytes, props: dict) -> tuple[bytes, int, str, int]:
        """(the maybe compressed body, sysFlag, UNIQ_KEY, born time) of a send; sets
        UNIQ_KEY in ``props`` when the message has none."""
        now = self._instance.runtime.clock.now_ms()
        uniq = props.get(Prop.UNIQ_KEY)
        if not uniq:
            uniq = self._instance.runtime.uniq_keys.next_id(now)
            props[Prop.UNIQ_KEY] = uniq
        sys_flag = 0
        if len(body) > self.compress_msg_body_over_howmuch:
            # Java: zip level 5 (Deflater, zlib format); consumers inflate it again.
            body = zlib.compress(body, 5)
            sys_flag |= SysFlag.COMPRESSED
        if props.get(Prop.TRAN_MSG) == "true":
            sys_flag |= SysFlag.TRANSACTION_PREPARED
        return body, sys_flag, uniq, now

    def _typed_request(self, topic: str, body: bytes, flag: int, props: dict,
                       mq: MessageQueue) -> tuple[SendRequest, str]:
        """The send of ``body`` to ``mq`` as the core's SendRequest (the wire carries its
        encoding, ``_send_request``)."""
        body, sys_flag, uniq, now = self._prepare(body, props)
        reconsume, max_reconsume = 0, None
        if topic.startswith(RETRY_PREFIX):
            rt = props.get(Prop.RECONSUME_TIME)
            reconsume = int(rt) if rt is not None else 0
            mx = props.get(Prop.MAX_RECONSUME_TIMES)
            max_reconsume = int(mx) if mx is not None else None
        # positional, in SendRequest's field order (producer_group, topic, body, queue_id,
        # properties, flag, sys_flag, born_timestamp, reconsume_times, max_reconsume_times,
        # default_topic, default_topic_queue_nums)
        if not all(props.values()):     # the wire drops empty values (string_to_properties)
            props = {k: v for k, v in props.items() if v}
        return SendRequest(self.group, topic, body, mq.queue_id, props, flag, sys_flag, now, reconsume,
                           max_reconsume, self.create_topic_key, self.default_topic_queue_nums or 4), uniq

    @staticmethod
    def _typed_result(core, result, topic: str, mq: MessageQueue, uniq: str) -> SendResult:
        code = send_code(result)
        status = _STORED_STATUS.get(code)
        if status is None:
            raise MQBrokerError(code, result.remark, None, f"SEND_MESSAGE_V2 {topic}")
        queue = mq if result.queue_id == mq.queue_id else MessageQueue(mq.topic, mq.broker_name, result.queue_id)
        return SendResult(status, uniq, result.msg_id, queue, result.queue_offset, core.config.region_id,
                          core.config.trace_topic_enable)

    def _send_request(self, topic: str, body: bytes, flag: int, props: dict,
                      mq: MessageQueue) -> tuple[dict, bytes, str]:
        """SEND_MESSAGE_V2's header, the (maybe compressed) body and the UNIQ_KEY: the
        codec's encoding of ``_typed_request``, the one send every transport carries."""
        req, uniq = self._typed_request(topic, body, flag, props, mq)
        return send_header_of(req, mq.broker_name), req.body, uniq

    @staticmethod
    def _send_result(resp, topic: str, mq: MessageQueue, uniq: str) -> SendResult:
        status = _STORED_STATUS.get(resp.code)
        if status is None:
            raise MQBrokerError(resp.code, resp.remark, None, f"SEND_MESSAGE_V2 {topic}")
        ext = resp.ext_fields or {}
        qid = int(ext.get("queueId", mq.queue_id))
        queue = mq if qid == mq.queue_id else MessageQueue(mq.topic, mq.broker_name, qid)
        return SendResult(status, uniq, ext.get("msgId", ""), queue, int(ext.get("queueOffset", -1)),
                          ext.get("MSG_REGION", "DefaultRegion"), ext.get("TRACE_ON") == "true")

    # -- asynchronous sending ---------------------------------------------------------------
    def send_async(self, msg: Message, callback: Callable[[SendResult | None, Exception | None], None], *,
                   timeout_ms: int | None = None) -> None:
        """Send without waiting (RocketMQ's ``send(msg, SendCallback)``): later, on the
        client loop, ``callback(result, None)`` or ``callback(None, error)``. Many sends
        may be in flight on one connection (pipelining); like the Java client, a failed
        attempt is retried on another queue up to ``retry_times_when_send_failed`` times.
        Bad input and a closed producer raise here, at once; the route is looked up
        synchronously the first time a topic is used."""
        if self.state is not ServiceState.RUNNING:
            self._make_sure_ok()
        body = check_message(msg, self.max_message_size, self._valid_topics)
        timeout = self.send_msg_timeout if timeout_ms is None else timeout_ms
        route = self._find_publish_route(msg.topic)
        self._send_async_attempt(msg.topic, body, msg.flag, msg.wire_properties(), timeout, callback,
                                 route.publish_queues, self.retry_times_when_send_failed, None)

    def _send_async_attempt(self, topic: str, body: bytes, flag: int, props: dict, timeout: int,
                            callback, queues, retries_left: int, last_broker: str | None) -> None:
        mq = self._select_queue(queues, last_broker)
        ext, wire_body, uniq = self._send_request(topic, body, flag, props, mq)

        def done(resp, err):
            if err is None:
                try:
                    result = self._send_result(resp, topic, mq, uniq)
                except MQBrokerError as exc:
                    err = exc
                else:
                    callback(result, None)
                    return
            retryable = not isinstance(err, MQBrokerError) or err.code in _RETRY_CODES
            if retryable and retries_left > 0 and self.state is ServiceState.RUNNING:
                self._send_async_attempt(topic, body, flag, props, timeout, callback, queues,
                                         retries_left - 1, mq.broker_name)
                return
            callback(None, err)

        self._instance.api.send_message_v2_async(ext, wire_body, done, timeout)

    def __repr__(self) -> str:
        return f"Producer({self.group!r}, {self.state.value})"
