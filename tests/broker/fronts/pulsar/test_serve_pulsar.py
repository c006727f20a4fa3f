"""The real Pulsar client through `serve` (issue 21): produce and consume across a
restart, delayed delivery under `clock advance`, partitioned topics from the CLI, the
redelivery count across a restart. (The listener's flags: tests/cli/test_serve_fronts.py.)"""
from __future__ import annotations

import pytest

pytest.importorskip("google_crc32c", reason="needs the pulsar extra: ./dev test installs it")

from tests.support.cli_run import one_error_line, run_cli  # noqa: E402
from tests.support.processes import EmulatorProcess  # noqa: E402


@pytest.mark.interop
def test_the_real_client_produces_and_consumes_through_serve_and_the_store_keeps_it(tmp_path):
    pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
    server = EmulatorProcess(tmp_path / "store", pulsar=True).start()
    try:
        client = pulsar.Client(f"pulsar://127.0.0.1:{server.pulsar_port}", operation_timeout_seconds=10)
        try:
            client.create_producer("persistent://shop/eu/orders").send(b"kept", properties={"id": "1"})
            consumer = client.subscribe("persistent://shop/eu/orders", "audit",
                                        initial_position=pulsar.InitialPosition.Earliest)
            m = consumer.receive(timeout_millis=5000)
            assert (m.data(), m.properties()) == (b"kept", {"id": "1"})
            consumer.acknowledge(m)
            consumer.close()
        finally:
            client.close()
    finally:
        server.stop()
    # restarted from its store: the message is there, and the subscription's cursor past it
    server = EmulatorProcess(tmp_path / "store", pulsar=True).start()
    try:
        client = pulsar.Client(f"pulsar://127.0.0.1:{server.pulsar_port}", operation_timeout_seconds=10)
        try:
            client.create_producer("persistent://shop/eu/orders").send(b"after restart")
            consumer = client.subscribe("persistent://shop/eu/orders", "audit")
            assert consumer.receive(timeout_millis=5000).data() == b"after restart"
            fresh = client.subscribe("persistent://shop/eu/orders", "replay",
                                     initial_position=pulsar.InitialPosition.Earliest)
            assert [fresh.receive(timeout_millis=5000).data() for _ in range(2)] == [b"kept", b"after restart"]
        finally:
            client.close()
    finally:
        server.stop()


@pytest.mark.interop
def test_delayed_delivery_waits_for_shared_subscriptions_and_clock_advance_moves_it(tmp_path):
    """deliver_after(1 h) on `serve --clock virtual`: a Shared consumer gets it only after
    `clock advance 1h`; an Exclusive subscription gets it at once (reference §8)."""
    import datetime

    pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
    server = EmulatorProcess(tmp_path / "store", "--clock", "virtual", pulsar=True).start()
    try:
        client = pulsar.Client(f"pulsar://127.0.0.1:{server.pulsar_port}", operation_timeout_seconds=10)
        try:
            shared = client.subscribe("later", "shared", consumer_type=pulsar.ConsumerType.Shared)
            excl = client.subscribe("later", "excl")
            client.create_producer("later").send(b"in an hour", deliver_after=datetime.timedelta(hours=1))
            assert excl.receive(timeout_millis=5000).data() == b"in an hour"
            with pytest.raises(pulsar.Timeout):
                shared.receive(timeout_millis=500)
            done = run_cli("clock", "advance", "59m", "--server", server.address, timeout=30)
            assert done.returncode == 0, done.stderr
            with pytest.raises(pulsar.Timeout):
                shared.receive(timeout_millis=500)
            done = run_cli("clock", "advance", "2m", "--server", server.address, timeout=30)
            assert done.returncode == 0, done.stderr
            assert shared.receive(timeout_millis=5000).data() == b"in an hour"
        finally:
            client.close()
    finally:
        server.stop()


def test_topic_create_pulsar_input_errors_are_one_line_exit_2():
    for args, says in ((["--partitions", "3"], "give --pulsar too"),
                       (["--pulsar", "--queues", "4"], "--queues is not for Pulsar topics"),
                       (["--pulsar", "--partitions", "2", "--server", "127.0.0.1:1"], None)):
        done = run_cli("topic", "create", "a/b" if says is None else "orders", *args, timeout=20)
        if says is None:                                     # "a/b" is not a Pulsar topic name
            assert done.returncode == 2 and "not <tenant>/<namespace>/<name>" in one_error_line(done.stderr,
                                                                                              "topic create")
        else:
            assert done.returncode == 2 and says in one_error_line(done.stderr, "topic create")


@pytest.mark.interop
def test_a_partitioned_topic_made_with_the_cli_spreads_the_real_clients_messages(tmp_path):
    pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
    server = EmulatorProcess(tmp_path / "store", pulsar=True).start()
    try:
        done = run_cli("topic", "create", "persistent://shop/eu/orders", "--pulsar", "--partitions", "3",
                       "--server", server.address, timeout=30)
        assert done.returncode == 0, done.stderr
        assert "3 partitions" in done.stdout and "pulsar|shop|eu|orders-partition-2" in done.stdout
        client = pulsar.Client(f"pulsar://127.0.0.1:{server.pulsar_port}", operation_timeout_seconds=10)
        try:
            producer = client.create_producer("persistent://shop/eu/orders",
                                              message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution)
            ids = [producer.send(b"o%d" % i) for i in range(6)]
            assert {m.partition() for m in ids} == {0, 1, 2}
            consumer = client.subscribe("persistent://shop/eu/orders", "all", consumer_type=pulsar.ConsumerType.Shared,
                                        initial_position=pulsar.InitialPosition.Earliest)
            got = sorted(consumer.receive(timeout_millis=5000).data() for _ in range(6))
            assert got == [b"o%d" % i for i in range(6)]
        finally:
            client.close()
    finally:
        server.stop()


@pytest.mark.interop
def test_the_redelivery_count_survives_a_broker_restart(tmp_path):
    """Seed 003: Pulsar forgets redelivery counts when the broker restarts, so a poison
    message can loop forever. Here the count is kept (saved at each flush)."""
    pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
    counts = []
    for _ in range(2):
        server = EmulatorProcess(tmp_path / "store", pulsar=True).start()
        try:
            client = pulsar.Client(f"pulsar://127.0.0.1:{server.pulsar_port}", operation_timeout_seconds=10)
            try:
                if not counts:
                    client.create_producer("poison").send(b"again")
                consumer = client.subscribe("poison", "work", consumer_type=pulsar.ConsumerType.Shared,
                                            initial_position=pulsar.InitialPosition.Earliest,
                                            negative_ack_redelivery_delay_ms=100)
                m = consumer.receive(timeout_millis=5000)
                counts.append(m.redelivery_count())
                consumer.negative_acknowledge(m)
                counts.append(consumer.receive(timeout_millis=5000).redelivery_count())
            finally:
                client.close()
        finally:
            server.stop()
    # 0, 1 before the restart; the consumer left holding it (not a redelivery), so 1 after, then 2
    assert counts == [0, 1, 1, 2]
