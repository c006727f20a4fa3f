"""The SDK's Pulsar client over TCP against `rocketmq-emulator serve` (real clock, short
delays), and beside the real pulsar-client 3.13.0 on the same broker: each reads what
the other's retry and dead-letter handling wrote (issue 22, item 5)."""
from __future__ import annotations

import time

import pytest

pytest.importorskip("google_crc32c", reason="needs the pulsar extra: ./dev test installs it")

from rocketmq_emulator.client_sdk.pulsar_client import (BrokerError, ConsumerType, DeadLetterPolicy,  # noqa: E402
                                                        InitialPosition, PulsarClient, PulsarClientError)
from tests.support.processes import EmulatorProcess  # noqa: E402

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def serve_process(tmp_path_factory):
    proc = EmulatorProcess(tmp_path_factory.mktemp("pulsar-sdk") / "store", pulsar=True).start()
    yield proc
    proc.stop()


@pytest.fixture
def server(serve_process):
    return f"pulsar://127.0.0.1:{serve_process.pulsar_port}"


@pytest.fixture
def client(server):
    c = PulsarClient(server, operation_timeout_seconds=10)
    yield c
    c.close()


def test_retry_letters_over_tcp_wait_their_level_then_dead_letter(client):
    consumer = client.subscribe("tcp-orders", "billing", consumer_type=ConsumerType.Shared, enable_retry=True,
                                dead_letter_policy=DeadLetterPolicy(2), delay_levels="1s 2s")
    client.create_producer("tcp-orders").send(b"poison", {"k": "v"})
    times = []
    t0 = time.monotonic()
    for _ in range(3):
        m = consumer.receive(timeout_millis=10_000)
        times.append(time.monotonic() - t0)
        consumer.reconsume_later(m)
    assert times[1] - times[0] >= 1.0 and times[2] - times[1] >= 2.0      # never before its level
    dlq = client.subscribe("tcp-orders-billing-DLQ", "audit", initial_position=InitialPosition.Earliest)
    dead = dlq.receive(timeout_millis=5000)
    assert (dead.data(), dead.properties()["RECONSUMETIMES"], dead.properties()["k"]) == (b"poison", "3", "v")


def test_negative_acks_over_tcp_count_and_dead_letter(client):
    consumer = client.subscribe("tcp-nacks", "s", consumer_type=ConsumerType.Shared,
                                negative_ack_redelivery_delay_ms=100, dead_letter_policy=DeadLetterPolicy(2))
    client.create_producer("tcp-nacks").send(b"x")
    counts = []
    for _ in range(3):
        m = consumer.receive(timeout_millis=5000)
        counts.append(m.redelivery_count())
        consumer.negative_acknowledge(m)
    assert counts == [0, 1, 2]
    dead = client.subscribe("tcp-nacks-s-DLQ", "a", initial_position=InitialPosition.Earliest).receive(5000)
    assert dead.data() == b"x" and dead.properties()["REAL_TOPIC"] == "persistent://public/default/tcp-nacks"


def test_the_broker_refusal_is_an_exception_with_its_code(client):
    client.subscribe("tcp-solo", "only")                       # Exclusive
    with pytest.raises(BrokerError) as info:
        client.subscribe("tcp-solo", "only")
    assert info.value.code == "ConsumerBusy"
    with pytest.raises(PulsarClientError, match="cannot connect"):
        PulsarClient("pulsar://127.0.0.1:1")


def test_the_real_client_reads_our_retry_and_dead_letters_and_we_read_its(server, client):
    pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
    # ours writes: a retry letter, then (max 1) a dead letter
    ours = client.subscribe("mixed", "sub", consumer_type=ConsumerType.Shared, enable_retry=True,
                            dead_letter_policy=DeadLetterPolicy(1), delay_levels="1s")
    client.create_producer("mixed").send(b"from-sdk", {"who": "sdk"})
    ours.reconsume_later(ours.receive(timeout_millis=5000))
    ours.reconsume_later(ours.receive(timeout_millis=5000))
    real = pulsar.Client(server, operation_timeout_seconds=10)
    try:
        retry = real.subscribe("mixed-sub-RETRY", "peek", initial_position=pulsar.InitialPosition.Earliest)
        letter = retry.receive(timeout_millis=5000)
        assert (letter.data(), letter.properties()["RECONSUMETIMES"], letter.properties()["who"]) == \
            (b"from-sdk", "1", "sdk")
        dead = real.subscribe("mixed-sub-DLQ", "peek", initial_position=pulsar.InitialPosition.Earliest)
        assert dead.receive(timeout_millis=5000).properties()["RECONSUMETIMES"] == "2"
        # the real client's dead-letter policy writes; ours reads
        policy = pulsar.ConsumerDeadLetterPolicy(max_redeliver_count=1)
        theirs = real.subscribe("native", "cpp", consumer_type=pulsar.ConsumerType.Shared,
                                negative_ack_redelivery_delay_ms=100, dead_letter_policy=policy)
        real.create_producer("native").send(b"from-cpp", properties={"who": "cpp"})
        for _ in range(2):
            theirs.negative_acknowledge(theirs.receive(timeout_millis=5000))
        reader = client.subscribe("native-cpp-DLQ", "ours", initial_position=InitialPosition.Earliest)
        got = reader.receive(timeout_millis=5000)            # (the client moves it 100 ms after the 2nd nack)
    finally:
        real.close()
    assert (got.data(), got.properties()["who"]) == (b"from-cpp", "cpp")
    assert got.properties()["REAL_TOPIC"] == "persistent://public/default/native"


@pytest.mark.parametrize("how, legacy", [({"delay_ms": 1000}, False), ({"level": 1}, False), ({}, False),
                                         ({}, True)], ids=["delay", "level", "increasing", "older-names"])
def test_every_mode_and_both_namings_over_tcp(client, how, legacy):
    topic = f"tcp-modes-{len(how)}-{'legacy' if legacy else 'default'}-{next(iter(how), 'inc')}"
    consumer = client.subscribe(topic, "sub", consumer_type=ConsumerType.Shared, enable_retry=True,
                                dead_letter_policy=DeadLetterPolicy(1), delay_levels="1s", legacy_retry_names=legacy)
    client.create_producer(topic).send(b"m")
    first = consumer.receive(timeout_millis=5000)
    t0 = time.monotonic()
    consumer.reconsume_later(first, **how)
    retry = consumer.receive(timeout_millis=10_000)
    assert time.monotonic() - t0 >= 1.0 and retry.properties()["RECONSUMETIMES"] == "1"
    expected_retry = "persistent://public/default/" + ("sub-RETRY" if legacy else f"{topic}-sub-RETRY")
    assert retry.topic_name() == expected_retry
    consumer.reconsume_later(retry, **how)
    dlq = client.subscribe(consumer.dead_letter_topic, "audit", initial_position=InitialPosition.Earliest)
    assert dlq.receive(timeout_millis=5000).properties()["RECONSUMETIMES"] == "2"


def test_a_partitioned_topic_is_refused_in_one_line_and_a_partition_works(serve_process, client):
    from tests.support.cli_run import run_cli

    done = run_cli("topic", "create", "persistent://public/default/parts", "--pulsar", "--partitions", "2",
                   "--server", f"127.0.0.1:{serve_process.port}")
    assert done.returncode == 0, done.stderr
    with pytest.raises(PulsarClientError, match="parts is partitioned .2 partitions.; this client takes one"):
        client.subscribe("parts", "s")
    producer = client.create_producer("parts-partition-1")
    producer.send(b"p1")
    reader = client.subscribe("parts-partition-1", "s", initial_position=InitialPosition.Earliest)
    assert reader.receive(timeout_millis=5000).data() == b"p1"
