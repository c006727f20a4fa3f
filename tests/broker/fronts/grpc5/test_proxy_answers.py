"""The real RocketMQ 5.x Python client (rocketmq-python-client) against the gRPC front, in
process on the test broker's virtual clock (the rocketmq5_endpoint fixture), tried the way
its users test against a local proxy: topic message types, transactions with check-back,
send results and properties as the proxy gives them, unknown topics, and a FIFO group
reading normal, delay and FIFO topics (issue 42). Waits are bounded; only the broker's
clock jumps."""
from __future__ import annotations

import threading

import pytest

pytest.importorskip("rocketmq.grpc_protocol", reason="needs the grpc extra: ./dev test installs it")

from rocketmq import (ClientConfiguration, ConsumeResult, Credentials, FilterExpression, Message,  # noqa: E402
                      Producer, PushConsumer, SimpleConsumer, TransactionChecker, TransactionResolution)
from rocketmq.v5.consumer.push.message_listener import MessageListener  # noqa: E402

from rocketmq_emulator.broker.rocketmq_model.groups import SubscriptionGroupConfig
from rocketmq_emulator.store.records import TRANS_CHECK_MAX_TIME_TOPIC, TRANS_HALF_TOPIC  # noqa: E402
from tests.support.processes import wait_for  # noqa: E402


@pytest.fixture
def config(rocketmq5_endpoint):
    return ClientConfiguration(rocketmq5_endpoint, Credentials(), request_timeout=3)


def message(topic, body, group=None, **props):
    m = Message()
    m.topic, m.body = topic, body
    if group:
        m.message_group = group
    for k, v in props.items():
        m.add_property(k, v)
    return m


def started(client):
    client.startup()
    return client


def receive_all(consumer, want, invisible=30, timeout=20.0):
    got = []
    wait_for(lambda: got.extend(consumer.receive(16, invisible)) or len(got) >= want, timeout=timeout, interval=0)
    return got


class Checker(TransactionChecker):
    """Answers each check-back with ``answer`` (None: not known yet)."""

    def __init__(self, answer=None):
        self.answer = answer
        self.checked: list[tuple[str, bytes]] = []
        self.lock = threading.Lock()

    def check(self, message):
        with self.lock:
            self.checked.append((message.message_id, message.body))
        return self.answer if self.answer is not None else TransactionResolution.TRANSACTION_RESOLUTION_UNSPECIFIED


# -- 1. topic message types -----------------------------------------------------------------------
def test_a_typed_topic_routes_its_type_and_the_client_refuses_another(config, rocketmq_broker):
    rocketmq_broker.create_topic("Fifo42", 2, message_type="fifo")
    rocketmq_broker.create_topic("Plain42", 2)                       # no type: as before
    p = started(Producer(config, ("Fifo42", "Plain42")))
    try:
        with pytest.raises(Exception, match="message type not match"):
            p.send(message("Fifo42", b"no group: a NORMAL message"))
        p.send(message("Fifo42", b"grouped", group="g1"))
        for m in (message("Plain42", b"normal"), message("Plain42", b"fifo", group="g")):
            p.send(m)                                                # an untyped topic takes both
    finally:
        p.shutdown()
    assert rocketmq_broker.max_offset("Fifo42", 0) + rocketmq_broker.max_offset("Fifo42", 1) == 1


def test_a_message_of_another_type_sent_anyway_is_refused_on_the_wire(rocketmq_broker, rocketmq5_endpoint):
    """What a client that does not check the route gets: the proxy's code, nothing stored."""
    import grpc
    from rocketmq.grpc_protocol import definition_pb2 as pb, service_pb2 as spb, service_pb2_grpc

    rocketmq_broker.create_topic("Fifo42w", 1, message_type="fifo")
    wrong = pb.Message(topic=pb.Resource(name="Fifo42w"), body=b"no group", system_properties=pb.SystemProperties(
        message_id="01WRONGTYPE", message_type=pb.NORMAL, body_encoding=pb.IDENTITY))
    with grpc.insecure_channel(rocketmq5_endpoint) as channel:
        reply = service_pb2_grpc.MessagingServiceStub(channel).SendMessage(
            spb.SendMessageRequest(messages=[wrong]), metadata=(("x-mq-client-id", "t42w"),), timeout=5)
    assert reply.status.code == pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
    assert "expected type is FIFO" in reply.status.message
    assert rocketmq_broker.max_offset("Fifo42w", 0) == 0


# -- 3. send results and properties as the proxy gives them ----------------------------------------
def test_a_send_receipt_carries_its_transaction_id_and_a_fifo_message_its_sharding_key(config, rocketmq_broker):
    rocketmq_broker.create_topic("Props42", 1)
    rocketmq_broker.core.update_group(SubscriptionGroupConfig("props-reader"))
    p = started(Producer(config, ("Props42",)))
    c = started(SimpleConsumer(config, "props-reader", {"Props42": FilterExpression("*")}, await_duration=1))
    try:
        normal = p.send(message("Props42", b"n"))
        fifo = p.send(message("Props42", b"f", group="order-7"))
        assert normal.transaction_id == normal.message_id and fifo.transaction_id == fifo.message_id
        got = {m.body: m for m in receive_all(c, 2)}
        assert got[b"f"].message_group == "order-7" and got[b"f"].properties.get("__SHARDINGKEY") == "order-7"
        assert "__SHARDINGKEY" not in got[b"n"].properties
    finally:
        c.shutdown()
        p.shutdown()


# -- 4. unknown topics ----------------------------------------------------------------------------
def test_the_route_of_an_unknown_topic_is_topic_not_found_and_no_topic_is_made(config, rocketmq_broker,
                                                                              rocketmq5_endpoint):
    """QueryRoute answers TOPIC_NOT_FOUND (40402), as a proxy. The Python client logs the
    failed route at start-up (the Node client's start-up fails:
    tests/interop/test_node5_client.py) and its send fails; the broker has made no topic
    on the lookups."""
    import grpc
    from rocketmq.grpc_protocol import definition_pb2 as pb, service_pb2 as spb, service_pb2_grpc

    with grpc.insecure_channel(rocketmq5_endpoint) as channel:
        reply = service_pb2_grpc.MessagingServiceStub(channel).QueryRoute(
            spb.QueryRouteRequest(topic=pb.Resource(name="Nowhere42")), metadata=(("x-mq-client-id", "t42"),),
            timeout=5)
    assert reply.status.code == pb.TOPIC_NOT_FOUND == 40402 and not reply.message_queues
    p = started(Producer(config, ("Nowhere42",)))
    try:
        with pytest.raises(Exception, match="failed to fetch topic:Nowhere42 route"):
            p.send(message("Nowhere42", b"to nowhere"))
    finally:
        p.shutdown()
    assert rocketmq_broker.core.topics.get("Nowhere42") is None


# -- 2. transactions -----------------------------------------------------------------------------
@pytest.fixture
def tx_topic(rocketmq_broker):
    rocketmq_broker.create_topic("Tx42", 1, message_type="transaction")
    rocketmq_broker.core.update_group(SubscriptionGroupConfig("tx-reader"))
    return "Tx42"


def test_a_committed_transaction_is_delivered_once_and_a_rolled_back_one_never(config, rocketmq_broker, tx_topic):
    p = started(Producer(config, (tx_topic,), Checker()))
    c = started(SimpleConsumer(config, "tx-reader", {tx_topic: FilterExpression("*")}, await_duration=1))
    try:
        kept = p.begin_transaction()
        kept_receipt = p.send(message(tx_topic, b"commit me"), kept)
        dropped = p.begin_transaction()
        p.send(message(tx_topic, b"roll me back"), dropped)
        assert rocketmq_broker.max_offset(tx_topic) == 0           # half messages: nothing to read yet
        assert c.receive(16, 30) == []
        assert rocketmq_broker.max_offset(TRANS_HALF_TOPIC) == 2
        kept.commit()
        dropped.rollback()
        [got] = receive_all(c, 1)
        assert got.body == b"commit me" and got.message_id == kept_receipt.message_id
        c.ack(got)
        assert c.receive(16, 30) == []
        assert rocketmq_broker.core.transactions.waiting() == []
    finally:
        c.shutdown()
        p.shutdown()


def test_an_unended_transaction_is_checked_back_over_telemetry_and_committed_there(config, rocketmq_broker,
                                                                                    tx_topic, time_travel):
    checker = Checker(TransactionResolution.COMMIT)
    p = started(Producer(config, (tx_topic,), checker))
    c = started(SimpleConsumer(config, "tx-reader", {tx_topic: FilterExpression("*")}, await_duration=1))
    try:
        receipt = p.send(message(tx_topic, b"decided later"), p.begin_transaction())   # never ended
        [waiting] = rocketmq_broker.core.transactions.waiting(tx_topic)
        assert waiting.checks == 0 and waiting.next_check_ms == rocketmq_broker.now_ms + 6000
        time_travel("5s")
        assert checker.checked == []
        time_travel("1s")                                   # transactionTimeOut: the first check
        wait_for(lambda: checker.checked, timeout=10)
        assert checker.checked == [(receipt.message_id, b"decided later")]
        [got] = receive_all(c, 1)
        assert got.body == b"decided later" and got.message_id == receipt.message_id
    finally:
        c.shutdown()
        p.shutdown()


def test_a_transaction_nobody_decides_is_checked_15_times_then_discarded(config, rocketmq_broker, tx_topic,
                                                                         time_travel):
    checker = Checker()                                     # "unknown" every time
    p = started(Producer(config, (tx_topic,), checker))
    try:
        p.send(message(tx_topic, b"never decided"), p.begin_transaction())
        time_travel("6s")
        wait_for(lambda: len(checker.checked) == 1, timeout=10)
        for n in range(2, 16):                              # then every transactionCheckInterval (60 s)
            time_travel("59s")
            assert len(checker.checked) == n - 1
            time_travel("1s")
            wait_for(lambda: len(checker.checked) == n, timeout=10)
        [waiting] = rocketmq_broker.core.transactions.waiting()
        assert waiting.checks == 15
        time_travel("60s")                                  # transactionCheckMax: discarded
        assert rocketmq_broker.core.transactions.waiting() == []
        [dead] = rocketmq_broker.messages(TRANS_CHECK_MAX_TIME_TOPIC)
        assert dead.body == b"never decided" and dead.get_property("REAL_TOPIC") == tx_topic
        assert rocketmq_broker.max_offset(tx_topic) == 0
        assert len(checker.checked) == 15
    finally:
        p.shutdown()


# -- 5. a FIFO group reading a normal, a delay and a FIFO topic -------------------------------------
class _StuckFifo(MessageListener):
    """Fails the FIFO message of group g1 every time; takes everything else."""

    def __init__(self):
        self.seen: list[tuple[str, bytes]] = []
        self.lock = threading.Lock()

    def consume(self, m):
        with self.lock:
            self.seen.append((m.topic, m.body))
        return ConsumeResult.FAILURE if m.body.startswith(b"g1-") else ConsumeResult.SUCCESS


def test_a_fifo_group_holds_back_only_the_message_group_of_an_unacked_message(config, rocketmq_broker, time_travel):
    for name, kind in (("N42", "normal"), ("D42", "delay"), ("F42", "fifo")):
        rocketmq_broker.create_topic(name, 4, message_type=kind)
    # g1-first fails each of its 4 local attempts (3 s apart), then goes to the DLQ
    rocketmq_broker.core.update_group(SubscriptionGroupConfig("fifo-all", consume_message_orderly=True,
                                                              retry_max_times=3))
    p = started(Producer(config, ("N42", "D42", "F42")))
    listener = _StuckFifo()
    topics = {t: FilterExpression("*") for t in ("N42", "D42", "F42")}
    pc = started(PushConsumer(config, "fifo-all", listener, topics))
    try:
        p.send(message("F42", b"g1-first", group="g1"))
        p.send(message("F42", b"g1-second", group="g1"))
        p.send(message("F42", b"g2-only", group="g2"))
        for i in range(4):
            p.send(message("N42", b"normal-%d" % i))
        delayed = message("D42", b"delayed")
        delayed.delivery_timestamp = rocketmq_broker.now_ms // 1000 + 30
        p.send(delayed)
        time_travel("30s")
        wanted = {b"normal-0", b"normal-1", b"normal-2", b"normal-3", b"delayed", b"g2-only"}
        wait_for(lambda: wanted <= {b for _, b in listener.seen}, timeout=8)
        assert b"g1-second" not in {b for _, b in listener.seen}      # its group waits for g1-first
        assert (b"g1-first" in {b for _, b in listener.seen})
        # once g1-first is in the DLQ (its attempts spent), its group goes on
        wait_for(lambda: b"g1-second" in {b for _, b in listener.seen}, timeout=30)
        bodies = [b for _, b in listener.seen]
        assert bodies.count(b"g1-first") == 4 and bodies.index(b"g1-second") > bodies.index(b"g1-first")
    finally:
        pc.shutdown()
        p.shutdown()
