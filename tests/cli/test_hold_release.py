"""Removing or clearing a `pull hold` rule answers the pulls it holds at once, on a
virtual-clock `serve` too (issue 47, item 4): the time the server's clock stands still
is no reason to keep a consumer waiting. Real clients over TCP, the clock never moved,
every wait bounded (well inside the clients' own long-poll times)."""
from __future__ import annotations

import pytest

from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, Message, Producer, PushConsumer, RemoteBroker
from tests.support.cli_run import run_cli
from tests.support.processes import EmulatorProcess


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    proc = EmulatorProcess(tmp_path_factory.mktemp("hold-release") / "store", "--clock", "virtual").start()
    yield proc
    proc.stop()


def cli(server, *args) -> str:
    done = run_cli(*args, "--server", server.address)
    assert done.returncode == 0, done.stderr
    return done.stdout


def fired(remote: RemoteBroker) -> int:
    return sum(r["hits"] for r in remote.faults.list())


@pytest.mark.parametrize("release", ["remove", "clear"])
def test_a_4x_pull_held_on_a_virtual_clock_is_answered_when_its_rule_goes(server, release):
    topic, group = f"Held4{release}", f"held4-{release}"
    cli(server, "topic", "create", topic, "--queues", "1")
    rule_id = cli(server, "fault", "add", "pull", "hold", "--group", group).split()[1].rstrip(":")
    remote = RemoteBroker(server.address)
    got = []
    consumer = PushConsumer(group, remote)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(lambda msgs, ctx: got.extend(msgs) or CONSUME_SUCCESS)
    producer = Producer("pg-held", remote).start()
    try:
        producer.send(Message(topic, b"held back"))
        consumer.start()
        assert remote.run_until(lambda: fired(remote) >= 1, "10s")     # its pull is held now
        remote.run_for("500ms")
        assert got == []
        cli(server, "fault", *(("remove", rule_id) if release == "remove" else ("clear",)))
        assert remote.run_until(lambda: got, "5s"), "the held pull was not answered"
        assert [m.body for m in got] == [b"held back"]
    finally:
        consumer.shutdown()
        producer.shutdown()
        remote.close()
