"""Non-persistent topics on the Pulsar front without a network (issue 51, item 4): who a
message goes to, what is dropped, what is refused with Pulsar's error, and that nothing
is stored or kept."""
from __future__ import annotations

import pytest

pytest.importorskip("google_crc32c", reason="needs the pulsar extra: ./dev test installs it")

from rocketmq_emulator.broker.fronts.pulsar import schema as s  # noqa: E402
from rocketmq_emulator.broker.fronts.pulsar.front import Connection  # noqa: E402
from rocketmq_emulator.broker.pulsar_model.names import parse_topic  # noqa: E402

from .raw import call, command, connected, producer, pushed, send  # noqa: E402

LIVE = "non-persistent://public/default/live"


def consumer_of(front, topic=LIVE, subscription="s", sub_type=s.SubType.Shared, permits=1000, consumer_id=0,
                **fields):
    """A new connection with one consumer on ``topic``: (its connection, the SUBSCRIBE's reply)."""
    conn = Connection()
    call(front, conn, command("CONNECT", "connect", client_version="t", protocol_version=20))
    [reply] = call(front, conn, command("SUBSCRIBE", "subscribe", topic=topic, subscription=subscription,
                                        subType=sub_type, consumer_id=consumer_id, request_id=7, **fields))
    if reply.type == s.Type.SUCCESS and permits:
        call(front, conn, command("FLOW", "flow", consumer_id=consumer_id, messagePermits=permits))
    return conn, reply


def test_each_subscription_gets_a_message_once_and_nothing_is_stored():
    front, conn = connected()
    assert producer(front, conn, LIVE)[0].producer_success.last_sequence_id == -1
    a1, _ = consumer_of(front, subscription="a")
    a2, _ = consumer_of(front, subscription="a")
    b, _ = consumer_of(front, subscription="b", sub_type=s.SubType.Exclusive)
    receipts = [send(front, conn, 0, i, b"m%d" % i)[0] for i in range(4)]
    assert {(r.send_receipt.message_id.ledgerId, r.send_receipt.message_id.entryId) for r in receipts} == {(0, 0)}
    shared = pushed(a1) + pushed(a2)
    assert len(shared) == 4 and {m.message.message_id.entryId for m in shared} == {0}     # Shared: each once
    assert [m.type for m in pushed(b)] == [s.Type.MESSAGE] * 4
    assert front.core.store.max_offset("pulsar|public|default|live", 0) == 0 and \
        not [t for t in front.core.topics.table if "live" in t]
    core = front.core
    _, series = core.rates.window(core.clock.now_ms(), 10)         # the rates /metrics and the dashboard read
    assert sum(series[("produced", "", LIVE)]) == 4
    assert sum(series[("consumed", "a", LIVE)]) == 4 and sum(series[("consumed", "b", LIVE)]) == 4


def test_a_consumer_without_permits_or_room_misses_what_is_sent_and_nothing_waits_for_it():
    front, conn = connected()
    producer(front, conn, LIVE)
    c, _ = consumer_of(front, permits=2)
    for i in range(5):
        send(front, conn, 0, i, b"m%d" % i)
    assert len(pushed(c)) == 2                              # the other 3 were dropped, as Pulsar drops them
    call(front, c, command("FLOW", "flow", consumer_id=0, messagePermits=10))
    assert pushed(c) == []                                  # no backlog to come back
    c.max_unsent, c.unsent = 100, 101                       # its connection is full: dropped too
    send(front, conn, 0, 9, b"late")
    assert pushed(c) == []
    stats = front.core.non_persistent_stats(LIVE)
    assert stats["msg_in"] == 6 and stats["subscriptions"]["s"]["dropped"] == 4
    assert stats["subscriptions"]["s"]["msg_out"] == 2


def test_acks_redeliveries_and_seek_are_taken_and_do_nothing():
    front, conn = connected()
    producer(front, conn, LIVE)
    c, _ = consumer_of(front)
    send(front, conn, 0, 0, b"once")
    [m] = pushed(c)
    message_id = {"ledgerId": 0, "entryId": 0}
    assert call(front, c, command("ACK", "ack", consumer_id=0, ack_type=s.AckType.Individual,
                                  message_id=[message_id])) == []
    [receipt] = call(front, c, command("ACK", "ack", consumer_id=0, ack_type=s.AckType.Individual,
                                       message_id=[message_id], request_id=3))
    assert receipt.type == s.Type.ACK_RESPONSE and not receipt.ackResponse.HasField("error")
    call(front, c, command("REDELIVER_UNACKNOWLEDGED_MESSAGES", "redeliverUnacknowledgedMessages", consumer_id=0,
                           message_ids=[message_id]))
    [ok] = call(front, c, command("SEEK", "seek", consumer_id=0, request_id=4, message_id=message_id))
    assert ok.type == s.Type.SUCCESS and pushed(c) == []               # nothing comes back


def test_refusals_are_pulsars():
    front, conn = connected()
    _, busy = consumer_of(front, subscription="x", sub_type=s.SubType.Exclusive)
    _, second = consumer_of(front, subscription="x", sub_type=s.SubType.Exclusive)
    assert (second.error.error, second.error.message) == (s.ServerError.ConsumerBusy,
                                                          "Exclusive consumer is already connected")
    _, other = consumer_of(front, subscription="x", sub_type=s.SubType.Shared)
    assert other.error.message == "Subscription is of different type"
    _, compacted = consumer_of(front, subscription="y", sub_type=s.SubType.Exclusive, read_compacted=True)
    assert (compacted.error.error, compacted.error.message) == (s.ServerError.NotAllowedError,
                                                                "readCompacted only valid on persistent topics")
    c, _ = consumer_of(front, subscription="z")
    [last] = call(front, c, command("GET_LAST_MESSAGE_ID", "getLastMessageId", consumer_id=0, request_id=5))
    assert (last.error.error, last.error.message) == (s.ServerError.NotAllowedError,
                                                      "getLastMessageId is not supported on non-persistent topic")
    producer(front, conn, LIVE, producer_name="p")
    [named] = producer(front, conn, LIVE, producer_id=1, request_id=2, producer_name="p")
    assert named.error.error == s.ServerError.ProducerBusy and "'p' is already connected" in named.error.message
    [long_name] = producer(front, conn, LIVE + "x" * 200, producer_id=2, request_id=3)
    assert long_name.error.error == s.ServerError.InvalidTopicName
    _, blank = consumer_of(front, subscription="")
    assert (blank.error.error, blank.error.message) == (s.ServerError.InvalidTopicName, "the subscription name is blank")


def test_unsubscribe_closing_and_disconnecting_unload_an_idle_topic():
    front, conn = connected()
    core = front.core
    c, _ = consumer_of(front, subscription="a")
    d, _ = consumer_of(front, subscription="a")
    [refused] = call(front, c, command("UNSUBSCRIBE", "unsubscribe", consumer_id=0, request_id=8))
    assert refused.error.message == "Unconnected or shared consumer attempting to unsubscribe"
    call(front, d, command("CLOSE_CONSUMER", "close_consumer", consumer_id=0, request_id=9))
    [ok] = call(front, c, command("UNSUBSCRIBE", "unsubscribe", consumer_id=0, request_id=10))
    assert ok.type == s.Type.SUCCESS and core.non_persistent_topics_of("public", "default") == []
    producer(front, conn, LIVE)
    reader, _ = consumer_of(front, subscription="reader-1", durable=False)
    assert core.non_persistent_topics_of("public", "default") == [LIVE]
    front.disconnect(reader)
    front.disconnect(conn)                                 # the reader's subscription and the producer go
    assert core.non_persistent_topics_of("public", "default") == [] and core.non_persistent_stats(LIVE) is None


def test_topics_of_a_namespace_by_mode_and_partitioned_metadata():
    front, conn = connected()
    producer(front, conn, "persistent://public/default/kept")
    producer(front, conn, LIVE, producer_id=1, request_id=2)
    front.core.create_non_persistent_partitioned(parse_topic("non-persistent://public/default/wide"), 3)

    def listed(mode):
        [r] = call(front, conn, command("GET_TOPICS_OF_NAMESPACE", "getTopicsOfNamespace", namespace="public/default",
                                        request_id=9, mode=mode))
        return list(r.getTopicsOfNamespaceResponse.topics)
    assert listed(s.TopicsMode.PERSISTENT) == ["persistent://public/default/kept"]
    assert listed(s.TopicsMode.NON_PERSISTENT) == [LIVE]
    assert sorted(listed(s.TopicsMode.ALL)) == [LIVE, "persistent://public/default/kept"]
    [pm] = call(front, conn, command("PARTITIONED_METADATA", "partitionMetadata",
                                     topic="non-persistent://public/default/wide", request_id=4))
    assert pm.partitionMetadataResponse.partitions == 3
    c, _ = consumer_of(front, topic="non-persistent://public/default/wide-partition-1")
    producer(front, conn, "non-persistent://public/default/wide-partition-1", producer_id=2, request_id=5)
    send(front, conn, 2, 0, b"to partition 1")
    [m] = pushed(c)
    assert m.message.message_id.partition == 1


def test_a_forced_delete_closes_the_topics_producers_and_consumers_and_a_subscription_alone_does_not_block():
    front, conn = connected()
    core = front.core
    topic = parse_topic(LIVE)
    producer(front, conn, LIVE)
    c, _ = consumer_of(front, subscription="a", consumer_id=3)
    with pytest.raises(Exception, match="Topic has active producers/subscriptions"):
        core.delete_non_persistent_topic(topic, False, partitioned=False)
    core.delete_non_persistent_topic(topic, True, partitioned=False)
    assert [(f.type, f.close_producer.producer_id) for f in pushed(conn)] == [(s.Type.CLOSE_PRODUCER, 0)]
    assert [(f.type, f.close_consumer.consumer_id) for f in pushed(c)] == [(s.Type.CLOSE_CONSUMER, 3)]
    assert core.non_persistent_stats(LIVE) is None
    assert send(front, conn, 0, 1, b"late")[0].type == s.Type.SEND_ERROR     # the producer is gone with it
    d, _ = consumer_of(front, subscription="kept", consumer_id=4)
    call(front, d, command("CLOSE_CONSUMER", "close_consumer", consumer_id=4, request_id=8))
    assert list(core.non_persistent_stats(LIVE)["subscriptions"]) == ["kept"]     # durable: it stays
    core.delete_non_persistent_topic(topic, False, partitioned=False)             # no client on it
    assert core.non_persistent_stats(LIVE) is None
