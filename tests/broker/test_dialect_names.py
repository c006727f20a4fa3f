"""Store names of another dialect (issue 34, item 7): a Pulsar topic's store name
(``pulsar|tenant|ns|name``) is not auto-created by a 4.x or 5.x client — it is refused
with that client's "topic not exist" code, as any unknown topic without auto-creation —
and every admin path that creates one keeps the Pulsar partition metadata consistent:
one queue per store topic, partitions 0..N-1 without gaps, never a topic both
partitioned and not. A Pulsar topic that exists stays open to the other dialects."""
from __future__ import annotations

import pytest

from rocketmq_emulator.broker.fronts.remoting.protocol import RequestCode as RQ, ResponseCode as RC
from rocketmq_emulator.broker.fronts.remoting.protocol.errors import RequestRefused

BASE = "pulsar|public|default|t"


def create(client, topic: str, queues: int = 1):
    return client.call(RQ.UPDATE_AND_CREATE_TOPIC, {"topic": topic, "readQueueNums": queues,
                                                    "writeQueueNums": queues, "perm": 6})


def test_a_4x_producer_does_not_auto_create_a_pulsar_store_name(core, client):
    for v2 in (False, True):
        reply = client.send(BASE, b"from 4.x", v2=v2)
        assert reply.code == RC.TOPIC_NOT_EXIST and "Pulsar" in reply.remark
    assert core.topics.get(BASE) is None
    assert client.send("Plain", b"x").code == RC.SUCCESS                       # other names: auto-created as ever
    assert core.topics.get("Plain").queue_nums == 4


def test_a_5x_client_auto_creates_no_topic_and_a_pulsar_store_name_is_not_found(core):
    pytest.importorskip("grpc", reason="needs the grpc extra: ./dev test installs it")
    from rocketmq_emulator.broker.fronts.grpc5.convert import pb
    from rocketmq_emulator.broker.fronts.grpc5.front import Rocketmq5Front

    front = Rocketmq5Front(core)
    status, queues = front.query_route(BASE, pb.Endpoints())
    assert (status.code, queues) == (pb.TOPIC_NOT_FOUND, [])
    status, _ = front.query_assignment(BASE, "g", pb.Endpoints())
    assert status.code == pb.TOPIC_NOT_FOUND
    assert core.topics.get(BASE) is None
    # no 5.x route creates its topic (issue 42): a plain name is refused the same way
    assert front.query_route("Plain5", pb.Endpoints())[0].code == pb.TOPIC_NOT_FOUND
    assert core.topics.get("Plain5") is None


def test_a_pulsar_topic_that_exists_stays_open_to_4x_clients(core, client):
    assert create(client, BASE).code == RC.SUCCESS
    reply = client.send(BASE, b"shared")
    assert reply.code == RC.SUCCESS and core.topics.get(BASE).queue_nums == 1


def test_admin_creation_keeps_one_queue_per_pulsar_store_topic(core, client):
    reply = create(client, BASE, queues=8)                                     # mqadmin updateTopic's default
    assert reply.code != RC.SUCCESS and "one queue" in reply.remark
    assert core.topics.get(BASE) is None
    with pytest.raises(RequestRefused, match="one queue"):
        core.create_topic(BASE, 4)
    assert create(client, BASE).code == RC.SUCCESS
    assert create(client, BASE).code == RC.SUCCESS                             # again, the same: fine


def test_admin_creation_keeps_the_partitions_consistent(core, client):
    part = "pulsar|public|default|p-partition-"
    reply = create(client, part + "3")                                         # a gap: 0..2 missing
    assert reply.code != RC.SUCCESS and "partition 2" in reply.remark
    for i in range(4):                                                         # what topic create --pulsar does
        assert create(client, part + str(i)).code == RC.SUCCESS
    assert create(client, part + "5").code != RC.SUCCESS
    reply = create(client, "pulsar|public|default|p")                          # p is partitioned
    assert reply.code != RC.SUCCESS and "partitioned" in reply.remark
    assert create(client, BASE).code == RC.SUCCESS
    reply = create(client, BASE + "-partition-0")                              # t is not
    assert reply.code != RC.SUCCESS and "not partitioned" in reply.remark
    with pytest.raises(RequestRefused, match="not partitioned"):
        core.create_topic(BASE + "-partition-0", 1)
    assert sorted(n for n in core.topics.table if n.startswith(part)) == [part + str(i) for i in range(4)]


@pytest.mark.interop
def test_a_16_partition_topic_gets_every_message_while_a_4x_producer_tries_its_name(tmp_path):
    """The issue's case: the 4.x producer's auto-created 4-queue `pulsar|public|default|t`
    made Pulsar consumers see 4 of 16 acknowledged messages."""
    pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
    from rocketmq_emulator.broker.cli.main import main
    from rocketmq_emulator.client_sdk import Message, MQBrokerError, Producer, RemoteBroker
    from tests.support.processes import EmulatorProcess

    server = EmulatorProcess(tmp_path / "store", pulsar=True).start()
    try:
        assert main(["topic", "create", "t", "--pulsar", "--partitions", "16", "--server", server.address]) == 0
        remote = RemoteBroker(server.address)
        producer4 = Producer("pg", remote, retry_times_when_send_failed=0).start()
        with pytest.raises(MQBrokerError) as refused:
            producer4.send(Message(BASE, b"from 4.x"))
        assert refused.value.code == RC.TOPIC_NOT_EXIST
        producer4.shutdown()
        remote.close()
        client = pulsar.Client(f"pulsar://127.0.0.1:{server.pulsar_port}", operation_timeout_seconds=10)
        try:
            consumer = client.subscribe("t", "all", initial_position=pulsar.InitialPosition.Earliest)
            producer = client.create_producer("t", batching_enabled=False)
            for i in range(16):
                producer.send(b"m%d" % i, partition_key=f"k{i}")
            got = sorted(consumer.receive(timeout_millis=5000).data() for _ in range(16))
            assert got == sorted(b"m%d" % i for i in range(16))
        finally:
            client.close()
    finally:
        server.stop()
