"""The SDK's scenarios over every transport, from one suite: in-process (commands as
objects), loopback (every command through the real codec, in process) and TCP (a
`rocketmq-emulator serve --clock virtual` subprocess). The same assertions hold on
all three; a difference means a transport changes behaviour.

On the in-process transports the whole loop runs on the virtual clock; over TCP the
client runs on real time and only the server's clock jumps (``advance``)."""
from __future__ import annotations

import itertools
import subprocess
import sys

import pytest

from rocketmq_emulator.client_sdk import (CONSUME_SUCCESS, RECONSUME_LATER, SUCCESS, SUSPEND_CURRENT_QUEUE_A_MOMENT,
                                         EmbeddedBroker, Message, Producer, PushConsumer, RemoteBroker)
from rocketmq_emulator.broker.fronts.remoting.protocol import codec
from rocketmq_emulator.client_sdk.transport import loopback
from rocketmq_emulator.client_sdk.transport.loopback import LoopbackBroker
from tests.support.serve_fixtures import server  # noqa: F401  (a fixture)

TRANSPORTS = ["inprocess", "loopback", "tcp"]
_names = itertools.count(1)


class Harness:
    """One broker reached over one transport, with the few verbs the scenarios need."""

    def __init__(self, kind: str, server_address: str | None) -> None:
        self.kind = kind
        if kind == "tcp":
            self.connector = RemoteBroker(server_address)
        else:
            self.connector = EmbeddedBroker(transport=kind)
        self.clients: list = []

    def name(self, prefix: str) -> str:
        return f"{prefix}{next(_names)}"          # one serve is shared by the module's tests

    def producer(self) -> Producer:
        p = Producer(self.name("pg"), self.connector).start()
        self.clients.append(p)
        return p

    def consumer(self, topic: str, listener, expression: str = "*", *, orderly: bool = False,
                 group: str | None = None, **options) -> PushConsumer:
        c = PushConsumer(group or self.name("cg"), self.connector, **options)
        c.subscribe(topic, expression)
        c.register_message_listener(listener, orderly=orderly)
        c.start()
        self.clients.append(c)
        return c

    def wait(self, predicate) -> bool:
        """Run the clients until ``predicate()``: virtual time in process, real over TCP."""
        if self.kind == "tcp":
            return self.connector.run_until(predicate, "15s")
        return self.connector.run_until(predicate, "1h")

    def advance(self, duration: str) -> None:
        """Move the broker's clock (and, in process, the clients' with it)."""
        if self.kind == "tcp":
            self.connector.advance_server_clock(duration)
        else:
            self.connector.advance(duration)

    def close(self) -> None:
        for c in reversed(self.clients):
            c.shutdown()
        self.connector.close()


@pytest.fixture(params=TRANSPORTS)
def harness(request):
    address = request.getfixturevalue("server").address if request.param == "tcp" else None
    h = Harness(request.param, address)
    yield h
    h.close()


def collecting(found: list, verdict=lambda m: CONSUME_SUCCESS):
    def listener(msgs, ctx):
        found.extend(msgs)
        return verdict(msgs[0])
    return listener


def test_the_loopback_hub_encodes_every_command(monkeypatch):
    """Every request and reply crosses the codec (frames counted), and what the core
    receives is the decoded copy, not the client's object."""
    frames = []

    def counting_encode(cmd):
        frame = codec.encode(cmd)
        frames.append((cmd.code, cmd.is_response))
        return frame
    monkeypatch.setattr(loopback, "encode", counting_encode)
    broker = EmbeddedBroker(transport="loopback")
    assert isinstance(broker.hub, LoopbackBroker)
    producer = broker.producer()
    before = len(frames)
    producer.send(Message("LoopT", b"x"))
    sent_codes = [code for code, is_response in frames[before:] if not is_response]
    assert 10 in sent_codes or 310 in sent_codes                  # SEND_MESSAGE (or its V2)
    assert len([f for f in frames[before:] if f[1]]) == len(sent_codes)    # each answered through it too
    with pytest.raises(ValueError, match="transport 'tcp' is not one of inprocess, loopback"):
        EmbeddedBroker(transport="tcp")
    broker.close()


def test_tags_filter_and_per_queue_order(harness):
    topic = harness.name("Orders")
    producer = harness.producer()
    sent = [producer.send(Message(topic, f"m{i}".encode(), tags="a" if i % 3 else "b")) for i in range(24)]
    found: list = []
    harness.consumer(topic, collecting(found), "a")
    want = [f"m{i}".encode() for i in range(24) if i % 3]
    assert harness.wait(lambda: len(found) == len(want))
    assert sorted(m.body for m in found) == sorted(want)
    for qid in {r.message_queue.queue_id for r in sent}:       # each queue in sending order
        in_queue = [f"m{i}".encode() for i, r in enumerate(sent) if r.message_queue.queue_id == qid and i % 3]
        assert [m.body for m in found if m.queue_id == qid] == in_queue
    assert all(m.tags == "a" and m.reconsume_times == 0 for m in found)


def test_a_poison_message_climbs_the_ladder_to_the_dlq(harness):
    topic = harness.name("Pay")
    producer = harness.producer()
    producer.send(Message(topic, b"ok"))
    poison = producer.send(Message(topic, b"poison", keys="p-1"))
    deliveries: list = []
    consumer = harness.consumer(topic, collecting(deliveries, lambda m: RECONSUME_LATER if m.body == b"poison"
                                                  else CONSUME_SUCCESS), max_reconsume_times=2)
    assert harness.wait(lambda: len(deliveries) == 2)
    for step, delay in ((3, "10s"), (4, "30s")):               # delay levels 3 and 4
        harness.advance(delay)
        assert harness.wait(lambda: len(deliveries) == step)
    assert [(m.body, m.reconsume_times) for m in deliveries if m.body == b"poison"] == [
        (b"poison", 0), (b"poison", 1), (b"poison", 2)]
    assert {m.msg_id for m in deliveries if m.body == b"poison"} == {poison.msg_id}
    dead: list = []
    harness.consumer("%DLQ%" + consumer.group, collecting(dead))
    assert harness.wait(lambda: len(dead) == 1)
    assert dead[0].body == b"poison" and dead[0].keys == "p-1" and dead[0].msg_id == poison.msg_id
    harness.advance("3h")
    assert not harness.wait(lambda: len(deliveries) > 4)        # never delivered again


def test_an_orderly_consumer_retries_in_place_without_a_send_back(harness):
    topic = harness.name("Seq")
    producer = harness.producer()
    queue = producer.send(Message(topic, b"first")).message_queue
    producer.send(Message(topic, b"second"), queue)
    failures = iter([SUSPEND_CURRENT_QUEUE_A_MOMENT])
    found: list = []
    consumer = harness.consumer(topic, collecting(found, lambda m: next(failures, SUCCESS)
                                                  if m.body == b"first" else SUCCESS), orderly=True)
    assert harness.wait(lambda: [m.body for m in found][-2:] == [b"first", b"second"])
    assert [m.body for m in found] == [b"first", b"first", b"second"]
    assert consumer.stats.send_back_ok == 0


def test_batches_and_async_sends_arrive_whole(harness):
    topic = harness.name("Batch")
    producer = harness.producer()
    batch = [Message(topic, f"b{i}".encode()) for i in range(5)]
    queue = producer.send(Message(topic, b"first")).message_queue
    producer.send_batch(batch, queue)
    results: list = []
    producer.send_async(Message(topic, b"async"), lambda res, err: results.append((res, err)))
    assert harness.wait(lambda: results)
    assert results[0][1] is None and results[0][0].msg_id
    found: list = []
    harness.consumer(topic, collecting(found))
    assert harness.wait(lambda: len(found) == 7)
    assert [m.body for m in found if m.queue_id == queue.queue_id][:6] == [b"first"] + [m.body for m in batch]


def test_the_pytest_option_runs_a_users_tests_over_loopback(tmp_path):
    """`pytest --rocketmq-transport=loopback` (the README's pytest guide) gives the
    user's rocketmq_broker fixture the loopback hub; a bad choice is one usage line."""
    (tmp_path / "test_user.py").write_text(
        "from rocketmq_emulator.client_sdk import Message\n"
        "def test_kind(rocketmq_broker, rocketmq_producer):\n"
        "    rocketmq_producer().send(Message('T', b'x'))\n"
        "    print('HUB', type(rocketmq_broker.hub).__name__)\n")
    run = [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "-p", "no:randomly",
           str(tmp_path / "test_user.py")]
    for option, hub in (([], "InProcessBroker"), (["--rocketmq-transport=loopback"], "LoopbackBroker")):
        done = subprocess.run(run + option, capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"HUB {hub}" in done.stdout
    done = subprocess.run(run + ["--rocketmq-transport=tcp"], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 4
    assert "argument --rocketmq-transport: invalid choice: 'tcp' (choose from 'inprocess', 'loopback')" in done.stderr
