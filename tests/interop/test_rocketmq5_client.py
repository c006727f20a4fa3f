"""The real RocketMQ 5.x Python client (rocketmq-python-client 5.1.2) against
`rocketmq-emulator serve`'s gRPC front, on a virtual clock that `clock advance` moves
(issue 20; reference rocketmq-5x-grpc.md). The client runs in this process on real
time; only the server's clock jumps. Waits are bounded."""
from __future__ import annotations

import subprocess
import sys
import threading

import pytest

rocketmq = pytest.importorskip("rocketmq", reason="needs the grpc extra: ./dev test installs it")
from rocketmq import (ClientConfiguration, ConsumeResult, Credentials, FilterExpression, Message,  # noqa: E402
                      Producer, PushConsumer, SimpleConsumer)
from rocketmq.v5.consumer.push.message_listener import MessageListener  # noqa: E402

from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, Message as Message4, Producer as Producer4  # noqa: E402
from rocketmq_emulator.client_sdk import PushConsumer as PushConsumer4, RemoteBroker  # noqa: E402
from tests.support.processes import EmulatorProcess, wait_for  # noqa: E402

pytestmark = pytest.mark.interop


# A 5.x route names only topics that exist (a proxy answers TOPIC_NOT_FOUND otherwise):
# the topics of these tests are made first, as their users make them.
TOPICS = ("T5a", "T5b", "T5c", "T5d", "T5e", "TMix", "TFifo", "T5slow")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    proc = EmulatorProcess(tmp_path_factory.mktemp("serve5") / "store", "--clock", "virtual", grpc=True).start()
    for topic in TOPICS:
        done = subprocess.run([sys.executable, "-m", "rocketmq_emulator.broker.cli", "topic", "create", topic,
                               "--server", proc.address], capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
    yield proc
    proc.stop()


def advance(server, duration: str) -> None:
    done = subprocess.run([sys.executable, "-m", "rocketmq_emulator.broker.cli", "clock", "advance", duration,
                           "--server", server.address], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr


def server_now_s(server) -> int:
    done = subprocess.run([sys.executable, "-m", "rocketmq_emulator.broker.cli", "clock", "now",
                           "--server", server.address], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[2]) // 1000          # "clock now <ms> ms (...)"


def config(server):
    return ClientConfiguration(f"127.0.0.1:{server.grpc_port}", Credentials(), request_timeout=3)


def message(topic, body, tag=None, keys=None, **props):
    m = Message()
    m.topic = topic
    m.body = body
    if tag:
        m.tag = tag
    if keys:
        m.keys = keys
    for k, v in props.items():
        m.add_property(k, v)
    return m


@pytest.fixture
def producer(server):
    p = Producer(config(server), ())
    p.startup()
    yield p
    p.shutdown()


def simple(server, group, topic, expr="*"):
    c = SimpleConsumer(config(server), group, {topic: FilterExpression(expr)}, await_duration=2)
    c.startup()
    return c


def receive(consumer, n=16, invisible=15, want=1, timeout=20.0):
    got = []
    wait_for(lambda: got.extend(consumer.receive(n, invisible)) or len(got) >= want, timeout=timeout, interval=0)
    return got


def test_send_receive_ack_with_tags_keys_and_properties(server, producer):
    receipt = producer.send(message("T5a", b"hello", tag="TagA", keys="k1", color="red"))
    c = simple(server, "G5a", "T5a")
    try:
        [m] = receive(c)
        assert (m.body, m.tag, m.keys, m.delivery_attempt) == (b"hello", "TagA", {"k1"}, 1)
        assert m.message_id == receipt.message_id and m.properties.get("color") == "red"
        c.ack(m)
        assert c.receive(16, 15) == []          # acked: gone (a 2 s long poll that finds nothing)
    finally:
        c.shutdown()


def test_an_unacked_message_returns_after_its_invisible_time_and_a_stale_handle_is_refused(server, producer):
    producer.send(message("T5b", b"again"))
    c = simple(server, "G5b", "T5b")
    try:
        [first] = receive(c, invisible=30)
        advance(server, "29s")
        assert c.receive(16, 30) == []
        advance(server, "1s")
        [second] = receive(c, invisible=30)
        assert second.body == b"again" and second.delivery_attempt == 2
        with pytest.raises(Exception, match="INVALID_RECEIPT_HANDLE|receipt handle"):
            c.ack(first)
        c.change_invisible_duration(second, 60)      # a new handle; the attempt stays
        advance(server, "59s")
        assert c.receive(16, 30) == []
        advance(server, "1s")
        [third] = receive(c)
        assert third.delivery_attempt == 3
        c.ack(third)
    finally:
        c.shutdown()


def test_after_17_deliveries_the_message_is_in_the_dlq_and_a_5x_consumer_reads_it(server, producer):
    receipt = producer.send(message("T5c", b"poison", tag="P"))
    c = simple(server, "G5c", "T5c")
    attempts = []
    try:
        for _ in range(17):
            [m] = receive(c, invisible=10)
            attempts.append(m.delivery_attempt)
            advance(server, "10s")
        assert attempts == list(range(1, 18))
        assert c.receive(16, 10) == []
    finally:
        c.shutdown()
    dlq = simple(server, "G5c-dlq-reader", "%DLQ%G5c")
    try:
        [dead] = receive(dlq)
        assert dead.body == b"poison" and dead.message_id == receipt.message_id and dead.tag == "P"
    finally:
        dlq.shutdown()


def test_a_delayed_message_arrives_at_its_timestamp_on_the_servers_clock(server, producer):
    m = message("T5d", b"later")
    m.delivery_timestamp = server_now_s(server) + 90        # the server's (virtual) time
    producer.send(m)
    c = simple(server, "G5d", "T5d")
    try:
        assert c.receive(16, 15) == []
        advance(server, "91s")
        [got] = receive(c)
        assert got.body == b"later" and got.delivery_timestamp is not None
        c.ack(got)
    finally:
        c.shutdown()


class _Failing(MessageListener):
    def __init__(self):
        self.attempts: list[int] = []
        self.lock = threading.Lock()

    def consume(self, message):
        with self.lock:
            self.attempts.append(message.delivery_attempt)
        return ConsumeResult.FAILURE


def test_a_push_consumer_that_always_fails_walks_the_retry_table_to_the_dlq(server, producer):
    """The client nacks with ChangeInvisibleDuration(next[attempt-1]) from the Settings'
    customized backoff (seed 002's table, 10 s .. 2 h); the server's clock jumps 2 h at
    a time, so 4 h 46 min of retries take seconds."""
    producer.send(message("T5e", b"always fails"))
    listener = _Failing()
    pc = PushConsumer(config(server), "G5e", listener, {"T5e": FilterExpression("*")})
    pc.startup()
    try:
        for n in range(1, 18):
            wait_for(lambda: len(listener.attempts) >= n, timeout=30)
            advance(server, "2h")
        assert listener.attempts == list(range(1, 18))
    finally:
        pc.shutdown()
    dlq = simple(server, "G5e-dlq-reader", "%DLQ%G5e")
    try:
        [dead] = receive(dlq)
        assert dead.body == b"always fails"
    finally:
        dlq.shutdown()


def test_a_5x_producer_and_a_4x_consumer_share_a_topic_and_the_reverse(server, producer):
    broker = RemoteBroker(server.address)
    got4 = []
    c4 = PushConsumer4("G4x", broker)
    c4.subscribe("TMix", "*")
    c4.register_message_listener(lambda msgs, ctx: got4.extend(msgs) or CONSUME_SUCCESS)
    c4.start()
    p4 = Producer4("P4x", broker).start()
    c5 = simple(server, "G5x", "TMix")
    try:
        receipt = producer.send(message("TMix", b"from 5.x", tag="T5", keys="key5"))
        p4.send(Message4("TMix", b"from 4.x", tags="T4", keys=["key4"]))
        assert broker.run_until(lambda: len(got4) >= 2, "15s")
        by_body = {m.body: m for m in got4}
        five = by_body[b"from 5.x"]
        assert five.tags == "T5" and five.keys == "key5" and five.msg_id == receipt.message_id
        seen5 = receive(c5, want=2)
        assert {m.body for m in seen5} == {b"from 5.x", b"from 4.x"}
        four = next(m for m in seen5 if m.body == b"from 4.x")
        assert four.tag == "T4" and four.keys == {"key4"} and four.delivery_attempt == 1
    finally:
        c5.shutdown()
        p4.shutdown()
        c4.shutdown()
        broker.close()


class _FailsFirstOfGroup(MessageListener):
    def __init__(self):
        self.seen: list[tuple[bytes, int]] = []
        self.lock = threading.Lock()

    def consume(self, message):
        with self.lock:
            self.seen.append((message.body, message.delivery_attempt))
        return ConsumeResult.FAILURE if message.body == b"g1-first" else ConsumeResult.SUCCESS


def test_a_fifo_group_blocks_a_failing_message_group_until_the_dlq_and_not_the_others(server, producer):
    done = subprocess.run([sys.executable, "-m", "rocketmq_emulator.broker.cli", "group", "create", "FG",
                           "--orderly", "--retry-max-times", "1", "--server", server.address],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    for body, group in ((b"g1-first", "g1"), (b"g1-second", "g1"), (b"g2-only", "g2")):
        m = message("TFifo", body)
        m.message_group = group
        producer.send(m)
    listener = _FailsFirstOfGroup()
    pc = PushConsumer(config(server), "FG", listener, {"TFifo": FilterExpression("*")})
    pc.startup()
    try:
        wait_for(lambda: any(b == b"g1-second" for b, _ in listener.seen), timeout=40)
    finally:
        pc.shutdown()
    bodies = [b for b, _ in listener.seen]
    # the failing message twice (2 = retryMaxTimes + 1, retried by the client), then the DLQ,
    # and only then its group's next message; the other group went its own way
    assert bodies.count(b"g1-first") == 2
    assert bodies.index(b"g1-second") > max(i for i, b in enumerate(bodies) if b == b"g1-first")
    assert b"g2-only" in bodies
    dlq = simple(server, "FG-dlq-reader", "%DLQ%FG")
    try:
        [dead] = receive(dlq)
        assert dead.body == b"g1-first" and dead.message_group == "g1"
    finally:
        dlq.shutdown()


class _Slow(MessageListener):
    """Holds each message until the test lets it go, then succeeds."""

    def __init__(self):
        self.seen: list[tuple[bytes, int]] = []
        self.lock = threading.Lock()
        self.go = threading.Event()

    def consume(self, message):
        with self.lock:
            self.seen.append((message.body, message.delivery_attempt))
        self.go.wait(60)
        return ConsumeResult.SUCCESS


def test_a_push_consumers_slow_delivery_is_renewed_not_redelivered(server, producer):
    """PushConsumer receives auto-renew: the server keeps the delivery invisible while the
    client is there, far past the 60 s it was popped for (reference §4.6); the client's
    ack of the original handle then commits it."""
    producer.send(message("T5slow", b"slow one"))
    listener = _Slow()
    pc = PushConsumer(config(server), "G5slow", listener, {"T5slow": FilterExpression("*")})
    pc.startup()
    try:
        wait_for(lambda: listener.seen, timeout=30)
        advance(server, "20m")                      # 20 virtual minutes inside the listener
        assert _committed(server, "G5slow", "T5slow") == 0
        listener.go.set()
        wait_for(lambda: _committed(server, "G5slow", "T5slow") == 1, timeout=30)
        assert listener.seen == [(b"slow one", 1)]  # never redelivered
    finally:
        listener.go.set()
        pc.shutdown()


def _committed(server, group, topic) -> int:
    """The group's committed offsets of the topic, summed over its 8 queues (4.x admin call)."""
    from rocketmq_emulator.client_sdk.api import BrokerAPI
    from rocketmq_emulator.client_sdk.errors import MQClientError

    broker = RemoteBroker(server.address)
    try:
        api = BrokerAPI(broker.connect())
        total = 0
        for qid in range(8):
            try:
                total += max(api.query_consumer_offset(group, topic, qid), 0)
            except MQClientError:       # no offset for that queue yet
                pass
        return total
    finally:
        broker.close()
