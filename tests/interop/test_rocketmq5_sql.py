"""SQL92 filters with the real RocketMQ 5.x Python client (rocketmq-python-client 5.1.2):
``FilterExpression(sql, FilterType.SQL)`` on a SimpleConsumer and a PushConsumer against
`serve`'s gRPC front (enablePropertyFilter left off: upstream's pop filters by SQL
whatever it says), and a bad expression answered ILLEGAL_FILTER_EXPRESSION with one line."""
from __future__ import annotations

import subprocess
import sys
import threading

import pytest

rocketmq = pytest.importorskip("rocketmq", reason="needs the grpc extra: ./dev test installs it")
from rocketmq import (ClientConfiguration, ConsumeResult, Credentials, FilterExpression, Message,  # noqa: E402
                      Producer, PushConsumer, SimpleConsumer)
from rocketmq.grpc_protocol import FilterType  # noqa: E402
from rocketmq.v5.consumer.push.message_listener import MessageListener  # noqa: E402
from rocketmq.v5.exception.client_exception import BadRequestException  # noqa: E402

from tests.support.processes import EmulatorProcess, wait_for  # noqa: E402

pytestmark = pytest.mark.interop

SQL = "region = 'eu' AND amount > 100"
ORDERS = [("eu", "150"), ("us", "500"), ("eu", "50"), ("eu", None), ("eu", "101")]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    proc = EmulatorProcess(tmp_path_factory.mktemp("serve5sql") / "store", "--clock", "virtual", grpc=True).start()
    for topic in ("SqlSimple", "SqlPush", "SqlBad"):
        done = subprocess.run([sys.executable, "-m", "rocketmq_emulator.broker.cli", "topic", "create", topic,
                               "--server", proc.address], capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
    yield proc
    proc.stop()


def config(server):
    return ClientConfiguration(f"127.0.0.1:{server.grpc_port}", Credentials(), request_timeout=3)


def send_orders(server, topic):
    producer = Producer(config(server), ())
    producer.startup()
    try:
        for i, (region, amount) in enumerate(ORDERS):
            m = Message()
            m.topic, m.body = topic, f"order-{i}".encode()
            m.add_property("region", region)
            if amount is not None:
                m.add_property("amount", amount)
            producer.send(m)
    finally:
        producer.shutdown()


def test_a_simple_consumer_receives_only_what_its_sql_takes(server):
    send_orders(server, "SqlSimple")
    c = SimpleConsumer(config(server), "GSql", {"SqlSimple": FilterExpression(SQL, FilterType.SQL)},
                       await_duration=2)
    c.startup()
    try:
        got = []
        wait_for(lambda: got.extend(c.receive(16, 15)) or len(got) >= 2, timeout=20, interval=0)
        assert sorted(m.body for m in got) == [b"order-0", b"order-4"]
        for m in got:
            c.ack(m)
        assert c.receive(16, 15) == []          # the rest were never for this group
    finally:
        c.shutdown()


class _Collect(MessageListener):
    def __init__(self):
        self.bodies: list[bytes] = []
        self.lock = threading.Lock()

    def consume(self, message):
        with self.lock:
            self.bodies.append(message.body)
        return ConsumeResult.SUCCESS


def test_a_push_consumer_with_sql_and_another_group_with_everything(server):
    send_orders(server, "SqlPush")
    eu, everything = _Collect(), _Collect()
    consumers = [PushConsumer(config(server), "GSqlPush", eu, {"SqlPush": FilterExpression(SQL, FilterType.SQL)}),
                 PushConsumer(config(server), "GAllPush", everything, {"SqlPush": FilterExpression("*")})]
    for pc in consumers:
        pc.startup()
    try:
        assert wait_for(lambda: len(eu.bodies) >= 2 and len(everything.bodies) >= len(ORDERS), timeout=30)
        assert sorted(eu.bodies) == [b"order-0", b"order-4"]
        assert sorted(everything.bodies) == sorted(f"order-{i}".encode() for i in range(len(ORDERS)))
    finally:
        for pc in consumers:
            pc.shutdown()


def test_bad_sql_is_illegal_filter_expression_with_one_line(server):
    c = SimpleConsumer(config(server), "GSqlBad", {"SqlBad": FilterExpression("amount >", FilterType.SQL)},
                       await_duration=2)
    c.startup()
    try:
        with pytest.raises(BadRequestException) as refused:
            c.receive(16, 15)
        text = str(refused.value)
        assert "40010" in text or "ILLEGAL_FILTER_EXPRESSION" in text, text
        assert "Invalid MessageSelector. expected a property, a literal or (, found the end at column 9" in text
    finally:
        c.shutdown()
