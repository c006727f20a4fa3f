"""Removing or clearing a `pull hold` rule answers the pulls it holds at once, on a
virtual-clock `serve` too (issue 47, item 4): the time the server's clock stands still
is no reason to keep a consumer waiting; and on a real clock whichever front the rule
was removed through (the HTTP API too). Real clients over TCP, the clock never moved,
every wait bounded (well inside the clients' own long-poll times). The 5.x and Pulsar
holds: test_faults_grpc5_serve.py, test_faults_pulsar_serve.py."""
from __future__ import annotations

import pytest

from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, Message, Producer, PushConsumer, RemoteBroker
from tests.cli.test_http_security import request
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


def held_then_released(server, topic: str, group: str, release) -> None:
    """A 4.x push consumer of ``group`` whose pull a hold rule keeps, until ``release(rule
    id)``: then its message comes within 5 s."""
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
        release(rule_id)
        assert remote.run_until(lambda: got, "5s"), "the held pull was not answered"
        assert [m.body for m in got] == [b"held back"]
    finally:
        consumer.shutdown()
        producer.shutdown()
        remote.close()


@pytest.mark.parametrize("release", ["remove", "clear"])
def test_a_4x_pull_held_on_a_virtual_clock_is_answered_when_its_rule_goes(server, release):
    held_then_released(server, f"Held4{release}", f"held4-{release}",
                       lambda rule_id: cli(server, "fault", *(("remove", rule_id) if release == "remove"
                                                               else ("clear",))))


def test_a_4x_pull_held_on_a_real_clock_is_answered_when_the_http_api_removes_its_rule(tmp_path):
    real = EmulatorProcess(tmp_path / "store", http=True).start()
    try:
        def remove(rule_id):
            status, _, body = request(real.http_port, "DELETE", f"/api/faults/{rule_id}", b"",
                                      {"Content-Type": "application/json"})
            assert (status, body) == (200, b'{"removed": true}')
        held_then_released(real, "HeldReal", "held-real", remove)
    finally:
        real.stop()
