"""`serve --brokers 2`: two brokers behind one name server in one process, driven the
way a user would (the CLI over the wire, the SDK over TCP), with seed 004's fallbacks:
a producer leaves a broker whose write permission is off, a consumer's send-back that
broker refuses lands on the other one through the inner producer, a stopped broker's
queues are rebalanced away and come back."""
from __future__ import annotations

import pytest

from rocketmq_emulator.broker.cli.main import main
from rocketmq_emulator.client_sdk import (CONSUME_SUCCESS, RECONSUME_LATER, Message, MessageQueue, Producer,
                                         PushConsumer, RemoteBroker)
from tests.support.processes import EmulatorProcess


@pytest.fixture
def cluster(tmp_path):
    server = EmulatorProcess(tmp_path / "store", "--clock", "virtual", brokers=2).start()
    remote = RemoteBroker(server.address)
    server.remote = remote
    server.clients = []
    yield server
    for c in reversed(server.clients):
        c.shutdown()
    remote.close()
    server.stop()


def cli(cluster, *argv: str) -> int:
    return main([*argv, "--server", cluster.address])


def producer(cluster) -> Producer:
    p = Producer("pg", cluster.remote).start()
    cluster.clients.append(p)
    return p


def consumer(cluster, group: str, topic: str, listener, **options) -> PushConsumer:
    c = PushConsumer(group, cluster.remote, **options)
    c.subscribe(topic, "*")
    c.register_message_listener(listener)
    c.start()
    cluster.clients.append(c)
    return c


def broker_of(cluster, message) -> str:
    port = message.store_host[1]
    return next(name for name, p in cluster.broker_ports.items() if p == port)


def test_the_brokers_listen_apart_and_the_name_server_lists_both(cluster, capsys):
    assert set(cluster.broker_ports) == {"broker-a", "broker-b"}
    assert cluster.broker_ports["broker-a"] == cluster.port != cluster.broker_ports["broker-b"]
    assert cli(cluster, "topic", "create", "Orders", "--queues", "2") == 0
    assert "on broker-a, broker-b" in capsys.readouterr().out
    assert cli(cluster, "broker", "list") == 0
    table = capsys.readouterr().out.splitlines()
    assert [line.split()[:3] for line in table[1:]] == [
        ["broker-a", f"127.0.0.1:{cluster.broker_ports['broker-a']}", "up"],
        ["broker-b", f"127.0.0.1:{cluster.broker_ports['broker-b']}", "up"]]
    p = producer(cluster)
    sent = [p.send(Message("Orders", b"m%d" % i)) for i in range(8)]
    assert {r.message_queue.broker_name for r in sent} == {"broker-a", "broker-b"}


def test_a_producer_leaves_a_broker_whose_write_is_off_and_comes_back(cluster, capsys):
    assert cli(cluster, "topic", "create", "Orders", "--queues", "2") == 0
    p = producer(cluster)
    assert {p.send(Message("Orders", b"x")).message_queue.broker_name for _ in range(4)} == {"broker-a", "broker-b"}
    assert cli(cluster, "broker", "perm", "broker-a", "--write", "off") == 0
    # the first send still picks broker-a from the old route: NO_PERMISSION, then broker-b
    after = [p.send(Message("Orders", b"y%d" % i)) for i in range(6)]
    assert {r.message_queue.broker_name for r in after} == {"broker-b"}
    assert cli(cluster, "broker", "list", "--json") == 0
    assert '"broker_permission": 4' in capsys.readouterr().out
    assert cli(cluster, "broker", "perm", "broker-a", "--write", "on") == 0
    fresh = producer(cluster)                 # (p sees it at its next route refresh, 30 s of real time)
    again = [fresh.send(Message("Orders", b"z%d" % i)) for i in range(8)]
    assert {r.message_queue.broker_name for r in again} == {"broker-a", "broker-b"}


def test_a_send_back_the_broker_refuses_goes_to_the_other_broker_through_the_inner_producer(cluster):
    assert cli(cluster, "topic", "create", "Pay", "--queues", "1") == 0
    producer(cluster).send(Message("Pay", b"poison"), MessageQueue("Pay", "broker-a", 0))
    assert cli(cluster, "broker", "perm", "broker-a", "--write", "off") == 0
    deliveries = []

    def fail_once(msgs, ctx):
        m = msgs[0]
        deliveries.append((broker_of(cluster, m), m.reconsume_times, m.topic))
        return RECONSUME_LATER if len(deliveries) == 1 else CONSUME_SUCCESS
    c = consumer(cluster, "cg", "Pay", fail_once)
    assert cluster.remote.run_until(lambda: len(deliveries) == 1, "15s")
    assert cluster.remote.run_until(lambda: c.stats.fallback_ok == 1, "15s")
    assert c.stats.send_back_ok == 0
    cluster.remote.advance_server_clock("10s")              # the copy's delay level 3
    assert cluster.remote.run_until(lambda: len(deliveries) == 2, "15s")
    assert deliveries == [("broker-a", 0, "Pay"), ("broker-b", 1, "Pay")]


def test_a_stopped_broker_refuses_connections_and_its_queues_come_back(cluster, capsys):
    import socket

    assert cli(cluster, "topic", "create", "Orders", "--queues", "2") == 0
    p = producer(cluster)
    assert cli(cluster, "broker", "stop", "broker-b") == 0
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", cluster.broker_ports["broker-b"]), timeout=2).close()
    assert {p.send(Message("Orders", b"a%d" % i)).message_queue.broker_name for i in range(6)} == {"broker-a"}
    assert cli(cluster, "broker", "stop", "broker-a") == 2          # the last one up
    assert "last broker up" in capsys.readouterr().err
    assert cli(cluster, "broker", "start", "broker-b") == 0
    socket.create_connection(("127.0.0.1", cluster.broker_ports["broker-b"]), timeout=2).close()
    got = []
    consumer(cluster, "cg", "Orders", lambda msgs, ctx: got.extend(msgs) or CONSUME_SUCCESS)
    assert cluster.remote.run_until(lambda: len(got) == 6, "15s")


@pytest.mark.parametrize("argv, message", [
    (["broker", "stop", "broker-x"], "no broker named 'broker-x'; the brokers are broker-a, broker-b"),
    (["broker", "start", "broker-a"], "broker-a is already running"),
    (["topic", "create", "T", "--broker", "broker-q"], "no broker named 'broker-q' is up"),
])
def test_bad_broker_requests_are_one_line_and_exit_2(cluster, capsys, argv, message):
    assert cli(cluster, *argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("count", ["0", "100"])
def test_serve_refuses_a_cluster_size_out_of_range(count, capsys):
    assert main(["serve", "--brokers", count, "--in-memory"]) == 2
    err = capsys.readouterr().err
    assert "--brokers" in err and len(err.strip().splitlines()) == 1


def test_remote_broker_does_from_python_what_the_cli_does(cluster):
    from rocketmq_emulator.client_sdk.errors import MQBrokerError

    remote = cluster.remote
    assert [(b.name, b.up, b.permission) for b in remote.brokers()] == [("broker-a", True, 6), ("broker-b", True, 6)]
    remote.set_writeable(False, "broker-b")
    remote.stop_broker("broker-b")
    assert [(b.name, b.up, b.permission) for b in remote.brokers()] == [("broker-a", True, 6), ("broker-b", False, 4)]
    with pytest.raises(MQBrokerError, match="broker-b is already stopped"):
        remote.stop_broker("broker-b")
    remote.start_broker("broker-b")
    assert all(b.up for b in remote.brokers())
