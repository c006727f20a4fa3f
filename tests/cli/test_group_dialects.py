"""`group list` shows every group the brokers know - 4.x groups, 5.x (gRPC) groups and
Pulsar subscriptions - each marked by the dialect of the clients that use it, and `group
show` keeps its columns straight however long a (Pulsar) name is. Real clients: the
SDK's 4.x PushConsumer, the 5.x Python SimpleConsumer, the Pulsar Python client."""
from __future__ import annotations

import json

import pulsar
import pytest
from rocketmq import ClientConfiguration, Credentials, FilterExpression, SimpleConsumer

from rocketmq_emulator.broker.cli.main import main
from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, PushConsumer, RemoteBroker
from tests.support.processes import EmulatorProcess, wait_for

LONG_SUBSCRIPTION = "audit-subscription-with-a-name-longer-than-any-column-of-the-table"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = EmulatorProcess(tmp_path_factory.mktemp("dialects") / "store", "--clock", "virtual", grpc=True,
                        pulsar=True).start()
    assert main(["topic", "create", "Orders", "--queues", "2", "--server", s.address]) == 0
    assert main(["message", "send", "Orders", "hello", "--server", s.address]) == 0
    remote = RemoteBroker(s.address)                               # 4.x: a push consumer's heartbeats
    consumer4 = PushConsumer("billing", remote, listener=lambda msgs, ctx: CONSUME_SUCCESS)
    consumer4.subscribe("Orders", "*").start()
    remote.run_for("500ms")
    config = ClientConfiguration(f"127.0.0.1:{s.grpc_port}", Credentials(), request_timeout=3)
    consumer5 = SimpleConsumer(config, "fivex", {"Orders": FilterExpression("*")}, await_duration=1)
    consumer5.startup()                                            # 5.x: receives (pops)
    wait_for(lambda: consumer5.receive(16, 30) or True, timeout=10)
    client = pulsar.Client(f"pulsar://127.0.0.1:{s.pulsar_port}", operation_timeout_seconds=10)
    sub = client.subscribe("orders", LONG_SUBSCRIPTION, consumer_type=pulsar.ConsumerType.Shared,
                           initial_position=pulsar.InitialPosition.Earliest)
    client.create_producer("orders").send(b"p")
    sub.acknowledge(sub.receive(10_000))
    yield s
    client.close()
    consumer5.shutdown()
    consumer4.shutdown()
    remote.close()
    s.stop()


def test_group_list_marks_each_group_by_dialect(server, capsys):
    assert main(["group", "list", "--json", "--server", server.address]) == 0
    rows = {r["group"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["billing"]["dialects"] == ["4.x"] and rows["billing"]["topics"] == ["Orders"]
    assert rows["fivex"]["dialects"] == ["5.x"]
    assert rows[LONG_SUBSCRIPTION]["dialects"] == ["pulsar"]
    assert rows[LONG_SUBSCRIPTION]["topics"] == ["persistent://public/default/orders"]
    assert main(["group", "list", "--server", server.address]) == 0
    lines = {line.split()[0]: line.split()[1] for line in capsys.readouterr().out.splitlines()[1:]}
    assert (lines["billing"], lines["fivex"], lines[LONG_SUBSCRIPTION]) == ("4.x", "5.x", "pulsar")


def test_group_show_keeps_its_columns_with_long_names(server, capsys):
    assert main(["group", "show", LONG_SUBSCRIPTION, "--server", server.address]) == 0
    header, *rows, _summary = capsys.readouterr().out.splitlines()
    assert rows
    for name in ("BROKER", "QUEUE", "BROKER OFFSET", "COMMITTED", "LAG"):
        end = header.index(name) + len(name)
        for row in rows:                     # right-aligned numbers end where their heading ends
            assert row[:end].rstrip() == row[:end] or name == "BROKER", (header, row)
    topic, broker = rows[0].split()[:2]
    assert topic == "persistent://public/default/orders" and broker == "broker-a"
    assert rows[0].index("broker-a") == header.index("BROKER")
