"""Fault rules for Pulsar clients from the command line (issue 38): `rocketmq-emulator
fault add|remove` against `serve`, the real pulsar-client over TCP: a hold stops a
subscription's deliveries until the rule is removed; a send refused with ChecksumError
raises in the application."""
from __future__ import annotations

import re

import pytest

from tests.support.cli_run import run_cli
from tests.support.processes import EmulatorProcess

pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
pytestmark = pytest.mark.interop

TOPIC = "persistent://public/default/orders"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    proc = EmulatorProcess(tmp_path_factory.mktemp("pulsar-faults") / "store", "--clock", "virtual",
                           pulsar=True).start()
    yield proc
    proc.stop()


@pytest.fixture
def client(server):
    c = pulsar.Client(f"pulsar://127.0.0.1:{server.pulsar_port}", operation_timeout_seconds=10)
    yield c
    c.close()


def fault(server, *args) -> str:
    done = run_cli("fault", *args, "--server", server.address)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("release", ["remove", "clear"])
def test_a_hold_from_the_command_line_stops_deliveries_until_it_is_removed(server, client, release):
    """(removed or cleared: released at once, the server's virtual clock never moved)"""
    subscription = f"billing-{release}"
    added = fault(server, "add", "pull", "hold", "--group", subscription)
    rule = re.match(r"rule (\d+):", added).group(1)
    consumer = client.subscribe(TOPIC, subscription, consumer_type=pulsar.ConsumerType.Shared,
                                initial_position=pulsar.InitialPosition.Latest)
    client.create_producer(TOPIC).send(b"held")
    with pytest.raises(pulsar.Timeout):
        consumer.receive(timeout_millis=300)
    if release == "remove":
        assert fault(server, "remove", rule).strip() == f"rule {rule} removed"
    else:
        assert fault(server, "clear").strip() == "1 rule(s) removed"
    assert consumer.receive(timeout_millis=5_000).data() == b"held"


def test_a_checksum_error_from_the_command_line_raises_in_the_producer(server, client):
    fault(server, "add", "send", "refuse", "--topic", TOPIC, "--error", "ChecksumError", "--times", "1")
    producer = client.create_producer(TOPIC, send_timeout_millis=5_000)
    with pytest.raises(pulsar.ChecksumError):
        producer.send(b"refused")
    producer.send(b"accepted")
