"""Fault rules from the command line against `rocketmq-emulator serve --clock virtual`'s
5.x gRPC front (issue 38), as a user runs them: `fault add pull delay` makes the real
Python 5.x client's receive wait until `clock advance` brings the answer; `fault add pull
hold` stops a group's deliveries and `fault remove` lets a receive already waiting
deliver. The client runs in this process on real time; only the server's clock jumps.
Waits are bounded."""
from __future__ import annotations

import json
import threading

import pytest

pytest.importorskip("rocketmq.grpc_protocol", reason="needs the grpc extra: ./dev test installs it")

from rocketmq import ClientConfiguration, Credentials, FilterExpression, Message, Producer, SimpleConsumer  # noqa: E402

from tests.support.cli_run import run_cli  # noqa: E402
from tests.support.processes import EmulatorProcess, wait_for  # noqa: E402

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    proc = EmulatorProcess(tmp_path_factory.mktemp("faults5") / "store", "--clock", "virtual", grpc=True).start()
    for topic in ("Late",):
        assert cli(proc, "topic", "create", topic, "--queues", "1").returncode == 0
    yield proc
    proc.stop()


def cli(server, *args):
    done = run_cli(*args, "--server", server.address)
    assert done.returncode == 0, done.stderr
    return done


def config(server):
    return ClientConfiguration(f"127.0.0.1:{server.grpc_port}", Credentials(), request_timeout=3)


def send(server, topic: str, body: bytes) -> str:
    p = Producer(config(server), (topic,))
    p.startup()
    try:
        m = Message()
        m.topic, m.body = topic, body
        return p.send(m).message_id
    finally:
        p.shutdown()


def consumer(server, group: str, topic: str, await_s: int) -> SimpleConsumer:
    c = SimpleConsumer(config(server), group, {topic: FilterExpression("*")}, await_duration=await_s)
    c.startup()
    return c


def receive_in_background(c: SimpleConsumer):
    got = []
    t = threading.Thread(target=lambda: got.append(c.receive(16, 30)), daemon=True)
    t.start()
    return t, got


def rules(server) -> list:
    return json.loads(cli(server, "fault", "list", "--json").stdout)


def test_a_receive_waits_for_clock_advance_to_bring_its_delayed_answer(server):
    message_id = send(server, "Late", b"on the server's clock")
    cli(server, "fault", "add", "pull", "delay", "--delay", "10s", "--group", "late-readers", "--times", "1")
    c = consumer(server, "late-readers", "Late", await_s=10)
    try:
        receiver, got = receive_in_background(c)
        wait_for(lambda: [r["state"] for r in rules(server)] == ["spent"], timeout=10)    # fired once: its timer set
        receiver.join(0.5)
        assert receiver.is_alive() and got == []
        cli(server, "clock", "advance", "10s")
        receiver.join(5)
        [[m]] = got
        assert m.message_id == message_id and m.delivery_attempt == 1
    finally:
        c.shutdown()


@pytest.mark.parametrize("release", ["remove", "clear"])
def test_a_hold_from_the_command_line_stops_a_group_and_its_removal_lets_a_waiting_receive_deliver(server, release):
    """(removed or cleared: the receive looks again every HOLD_RECHECK_S of real time, on
    the server's virtual clock too)"""
    group, topic = f"held-readers-{release}", f"Held-{release}"
    cli(server, "topic", "create", topic, "--queues", "1")
    added = cli(server, "fault", "add", "pull", "hold", "--group", group)
    rule_id = added.stdout.split()[1].rstrip(":")
    message_id = send(server, topic, b"held back")
    c = consumer(server, group, topic, await_s=15)
    try:
        receiver, got = receive_in_background(c)
        receiver.join(1.0)
        assert receiver.is_alive() and got == []                  # stored and visible, but held
        cli(server, "fault", *(("remove", rule_id) if release == "remove" else ("clear",)))
        receiver.join(5)                                          # inside its 15 s long poll
        [[m]] = got
        assert m.message_id == message_id
    finally:
        c.shutdown()
