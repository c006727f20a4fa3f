"""Lite topics (RIP-83) with the real LitePushConsumer of rocketmq-python-client 5.1.2
against `rocketmq-emulator serve`'s gRPC front on a virtual clock (issue 51, item 1).
The clients run on real time in this process; only the server's clock jumps. Waits are
bounded."""
from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest

rocketmq = pytest.importorskip("rocketmq", reason="needs the grpc extra: ./dev test installs it")
from rocketmq import (ClientConfiguration, ConsumeResult, Credentials, FilterExpression, Message,  # noqa: E402
                      Producer, SimpleConsumer)
from rocketmq.v5.consumer import LitePushConsumer  # noqa: E402
from rocketmq.v5.consumer.push.message_listener import MessageListener  # noqa: E402
from rocketmq.v5.exception import LiteSubscriptionQuotaExceededException  # noqa: E402

from tests.support.processes import EmulatorProcess, wait_for  # noqa: E402

pytestmark = pytest.mark.interop


def cli(server, *args):
    return subprocess.run([sys.executable, "-m", "rocketmq_emulator.broker.cli", *args, "--server", server.address],
                          capture_output=True, text=True, timeout=30)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("serve5lite")
    conf = root / "broker.conf"
    conf.write_text("maxLiteSubscriptionCount=40\n")
    proc = EmulatorProcess(root / "store", "--clock", "virtual", "--config", str(conf), grpc=True).start()
    for topic, kind, queues in (("Chats", "lite", "4"), ("Plain", "normal", "4"), ("Jobs", "priority", "10")):
        done = cli(proc, "topic", "create", topic, "--message-type", kind, "--queues", queues)
        assert done.returncode == 0, done.stderr
    yield proc
    proc.stop()


def config(server):
    return ClientConfiguration(f"127.0.0.1:{server.grpc_port}", Credentials(), request_timeout=3)


@pytest.fixture
def producer(server):
    p = Producer(config(server), ("Chats",))
    p.startup()
    yield p
    p.shutdown()


def lite_message(lite, body):
    m = Message()
    m.topic = "Chats"
    m.body = body
    m.lite_topic = lite
    return m


class _Recording(MessageListener):
    def __init__(self, fail_times: int = 0):
        self.got: list[tuple[str, bytes, int]] = []
        self.fail_times = fail_times
        self.lock = threading.Lock()

    def consume(self, message):
        with self.lock:
            self.got.append((message.lite_topic, message.body, message.delivery_attempt))
        return ConsumeResult.FAILURE if message.delivery_attempt <= self.fail_times else ConsumeResult.SUCCESS


def subscribe(consumer, lite):
    """subscribe_lite, then the complete set: 5.1.2's subscribe_lite sends the name's
    characters as the lite topics of its PARTIAL_ADD (``lite_topic_set.extend(name)``),
    which a broker takes as they come; the complete sync (every 30 s, or
    subscribe_lite_all) states the real set."""
    consumer.subscribe_lite(lite)
    consumer.subscribe_lite_all()


def lite_consumer(server, group, listener):
    c = LitePushConsumer(config(server), group, "Chats", listener, consumption_thread_count=1)
    c.startup()
    return c


def test_a_lite_consumer_receives_exactly_the_lite_topics_it_subscribed_to(server, producer):
    mine, theirs = _Recording(), _Recording()
    a = lite_consumer(server, "GLiteA", mine)
    b = lite_consumer(server, "GLiteB", theirs)
    try:
        subscribe(a, "session-1")
        subscribe(b, "session-2")
        producer.send(lite_message("session-1", b"for a"))
        producer.send(lite_message("session-2", b"for b"))
        producer.send(lite_message("session-3", b"for nobody"))
        wait_for(lambda: mine.got and theirs.got, timeout=20)
        assert mine.got == [("session-1", b"for a", 1)]
        assert theirs.got == [("session-2", b"for b", 1)]
        a.unsubscribe_lite("session-1")
        producer.send(lite_message("session-1", b"after unsubscribe"))
        subscribe(a, "session-3")           # one it subscribes late: what was sent before is there
        wait_for(lambda: len(mine.got) >= 2, timeout=20)
        assert mine.got[1] == ("session-3", b"for nobody", 1)
        shown = cli(server, "group", "show", "GLiteA")
        assert shown.returncode == 0 and "session-3" in shown.stdout, shown.stdout
        # its own view of the group's lite consumers: the client and what it subscribed to
        [line] = [ln for ln in shown.stdout.splitlines() if ln.startswith("  ") and "Chats:" in ln]
        assert line.rstrip().endswith("Chats: session-3") and "lite subscriptions: 1 of 1" in shown.stdout, shown.stdout
        listed = cli(server, "topic", "list")       # a lite topic's own queue is not a topic to list
        assert listed.returncode == 0 and "Chats" in listed.stdout and "%LMQ%" not in listed.stdout, listed.stdout
        topic = cli(server, "topic", "show", "Chats")
        assert topic.returncode == 0 and "session-1" in topic.stdout and "session-2" in topic.stdout, topic.stdout
    finally:
        a.shutdown()
        b.shutdown()
    assert [g for g in mine.got if g[1] == b"after unsubscribe"] == []


def test_a_failing_lite_consumer_walks_the_whole_retry_ladder_in_place_to_the_dlq(server, producer):
    """The client nacks each failure with the Settings' backoff (10 s .. 2 h); the message
    comes back in its lite topic's queue with its next attempt — each at once when the
    server's clock reaches it (a held receive is woken) — and after the 17th delivery
    (retryMaxTimes 16) it is in %DLQ%<group> with its lite topic."""
    failing = _Recording(fail_times=100)
    c = lite_consumer(server, "GLiteRetry", failing)
    try:
        subscribe(c, "task-9")
        producer.send(lite_message("task-9", b"always fails"))
        for n in range(1, 18):
            wait_for(lambda: len(failing.got) >= n, timeout=30)
            cli(server, "clock", "advance", "2h")
        assert [a for _, _, a in failing.got] == list(range(1, 18))
        assert {(lite, body) for lite, body, _ in failing.got} == {("task-9", b"always fails")}
    finally:
        c.shutdown()
    listed = cli(server, "dlq", "list", "GLiteRetry", "--json")
    assert listed.returncode == 0, listed.stderr
    [dead] = json.loads(listed.stdout)
    # its stored topic is the lite topic's queue (a re-drive goes back there); 17
    # deliveries, so reconsume times 18 in the DLQ, as any 5.x dead letter
    assert (dead["original_topic"], dead["attempts"]) == ("%LMQ%Chats%task-9", 18)
    reader = SimpleConsumer(config(server), "GLiteRetry-dlq", {"%DLQ%GLiteRetry": FilterExpression("*")},
                            await_duration=2)
    reader.startup()
    try:
        got = []
        wait_for(lambda: got.extend(reader.receive(16, 15)) or got, timeout=20, interval=0)
        [m] = got
        assert (m.body, m.lite_topic) == (b"always fails", "task-9")
    finally:
        reader.shutdown()


def test_the_broker_wide_subscription_quota_is_answered_with_its_code(server):
    c = lite_consumer(server, "GLiteQuota", _Recording())
    try:
        with pytest.raises(LiteSubscriptionQuotaExceededException, match="quota"):
            for n in range(60):
                subscribe(c, f"q{n}")
    finally:
        c.shutdown()


def test_message_show_and_topic_show_say_a_priority_messages_priority_and_type(server):
    p = Producer(config(server), ("Jobs",))
    p.startup()
    try:
        m = Message()
        m.topic, m.body, m.priority = "Jobs", b"urgent", 7
        receipt = p.send(m)
    finally:
        p.shutdown()
    shown = cli(server, "message", "show", receipt.message_id)
    assert shown.returncode == 0, shown.stderr
    assert "priority         7 (0..9, larger first)" in shown.stdout, shown.stdout
    topic = cli(server, "topic", "show", "Jobs")
    assert topic.returncode == 0 and "message type: PRIORITY" in topic.stdout, topic.stdout
    assert [ln.split()[1:4] for ln in topic.stdout.splitlines() if ln.split()[1:2] == ["7"]] == [["7", "0", "1"]]
