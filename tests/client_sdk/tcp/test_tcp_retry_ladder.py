"""RocketMQ's retry path over the wire, on a virtual-clock `serve` moved by the clock
request: a failing listener → CONSUMER_SEND_MSG_BACK → %RETRY%<group> after the level's
delay → ... → %DLQ%<group> after maxReconsumeTimes. The client loop runs on real time;
only the server's clock jumps."""
from __future__ import annotations

import subprocess
import sys

import pytest

from rocketmq_emulator.client_sdk import (CONSUME_SUCCESS, RECONSUME_LATER, Message, MQBrokerError, Producer,
                                         PushConsumer, ServerClockError)
from tests.support.processes import EmulatorProcess

# messageDelayLevel 3..18: what the n-th retry waits (broker default levels).
LADDER = ["10s", "30s", "1m", "2m", "3m", "4m", "5m", "6m", "7m", "8m", "9m", "10m", "20m", "30m", "1h", "2h"]


def clock_advance_cli(address, duration):
    """`rocketmq-emulator clock advance DURATION --server HOST:PORT`, as a user types it."""
    done = subprocess.run([sys.executable, "-m", "rocketmq_emulator.broker.cli", "clock", "advance", duration, "--server", address],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def dlq_reader(remote, group, unique):
    """A consumer of %DLQ%<group> (perm RW, one queue) that collects what it finds."""
    found = []
    c = PushConsumer(unique("dlq-reader"), remote,
                     listener=lambda msgs, ctx: (found.extend(msgs), CONSUME_SUCCESS)[1])
    c.subscribe("%DLQ%" + group, "*").start()
    return c, found


def test_failed_message_goes_to_retry_then_dlq_after_max_reconsume_times(server, remote, unique):
    topic, group = unique("Pay"), unique("payments")
    r = remote()
    producer = Producer(unique("pg"), r).start()
    producer.send(Message(topic, b"ok", tags="T"))
    sent = producer.send(Message(topic, b"poison", tags="T", keys="p-1"))

    deliveries = []

    def listener(msgs, ctx):
        deliveries.extend((m.body, m.reconsume_times, m.msg_id) for m in msgs)
        return RECONSUME_LATER if msgs[0].body == b"poison" else CONSUME_SUCCESS

    consumer = PushConsumer(group, r, listener=listener, max_reconsume_times=2)
    consumer.subscribe(topic, "*").start()
    assert r.run_until(lambda: len(deliveries) == 2, "10s")
    assert sorted(d[:2] for d in deliveries) == [(b"ok", 0), (b"poison", 0)]
    assert consumer.stats.send_back_ok == 1

    r.run_for("100ms")
    assert len(deliveries) == 2                           # nothing before the server's clock moves
    assert "clock now" in clock_advance_cli(server.address, "10s")     # delay level 3
    assert r.run_until(lambda: len(deliveries) == 3, "10s")
    assert deliveries[-1] == (b"poison", 1, sent.msg_id)  # same id, from %RETRY%<group>, topic restored

    clock_advance_cli(server.address, "30s")              # delay level 4
    assert r.run_until(lambda: len(deliveries) == 4, "10s")
    assert deliveries[-1] == (b"poison", 2, sent.msg_id)
    assert r.run_until(lambda: consumer.stats.send_back_ok == 3, "10s")

    # reconsumeTimes 2 >= maxReconsumeTimes 2: the third send-back dead-letters it.
    reader, found = dlq_reader(r, group, unique)
    assert r.run_until(lambda: len(found) == 1, "10s")
    [dead] = found
    assert dead.body == b"poison" and dead.keys == "p-1" and dead.msg_id == sent.msg_id
    assert dead.topic == "%DLQ%" + group
    r.advance_server_clock("3h")
    r.run_for("200ms")
    assert len(deliveries) == 4                           # never delivered again
    reader.shutdown()
    consumer.shutdown()
    producer.shutdown()


def test_the_whole_default_16_retry_ladder_over_the_wire(remote, unique):
    topic, group = unique("Ladder"), unique("ladder")
    r = remote()
    producer = Producer(unique("pg"), r).start()
    sent = producer.send(Message(topic, b"poison"))
    times = []

    def listener(msgs, ctx):
        times.extend(m.reconsume_times for m in msgs)
        return RECONSUME_LATER

    consumer = PushConsumer(group, r, listener=listener)   # maxReconsumeTimes -1: 16 concurrently
    consumer.subscribe(topic, "*").start()
    assert r.run_until(lambda: len(times) == 1, "10s")
    for n, delay in enumerate(LADDER, start=1):
        assert r.run_until(lambda: consumer.stats.send_back_ok == n, "10s")
        before = len(times)
        r.advance_server_clock(delay)
        assert r.run_until(lambda: len(times) == before + 1, "10s"), f"retry {n} after {delay} never came"
    assert times == list(range(17))                       # 1 delivery + 16 retries
    reader, found = dlq_reader(r, group, unique)
    assert r.run_until(lambda: len(found) == 1, "10s")
    assert found[0].msg_id == sent.msg_id and found[0].body == b"poison"
    reader.shutdown()
    consumer.shutdown()
    producer.shutdown()


def test_a_real_clock_server_refuses_the_clock_request(tmp_path, remote):
    proc = EmulatorProcess(tmp_path / "store").start()      # --clock real is the default
    try:
        with pytest.raises(ServerClockError) as refused:
            remote(proc.address).advance_server_clock("10s")
        # says whose clock, why, and what to do; no wire jargon glued on after the advice
        assert str(refused.value) == (
            f"cannot move the clock of {proc.address}: this server runs on the real clock; restart it with "
            "`rocketmq-emulator serve --clock virtual` (or `./dev serve --clock virtual`) to move its time")
        assert isinstance(refused.value, MQBrokerError) and refused.value.code_name == "SYSTEM_ERROR"
    finally:
        proc.stop()
