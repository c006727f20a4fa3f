"""The core's typed offset and client operations, called without any 4.x header or body
(the wire replies are held by tests/broker/test_offsets_and_queries.py and
test_clients_and_locks.py)."""
from rocketmq_emulator.broker.operations import CommitOutcome, OffsetCommit

from .wire import WireClient
from tests.support.remoting import front_of


def test_commit_and_resume(core):
    c = WireClient(core)
    c.send("T", b"a")
    c.send("T", b"b")
    assert c.heartbeat("G", ["T"]).code == 0
    assert core.committed_offset("G", "T", 0) == 0               # nothing stored, offset 0 still held
    assert core.commit_offset(OffsetCommit("G", "T", 0, 2)) is CommitOutcome.COMMITTED
    assert core.committed_offset("G", "T", 0) == 2
    assert core.commit_offset(OffsetCommit("G", "Nope", 0, 1)) is CommitOutcome.TOPIC_NOT_EXIST
    assert core.commit_offset(OffsetCommit("Unknown", "T", 0, 1)) is CommitOutcome.GROUP_NOT_EXIST
    assert core.committed_offset("Unknown", "T", 0) == 0
    assert core.queue_bounds("T", 0) == (0, 2) and core.queue_bounds("Nope", 0) == (0, 0)
    first = core.earliest_store_time("T", 0)
    assert first == core.clock.now_ms() and core.earliest_store_time("Nope", 0) == -1
    assert core.offset_at_time("T", 0, first) == 0


def test_registration_without_a_heartbeat_body(core):
    """register / consumer_ids / unregister / locks, called as typed operations."""
    from rocketmq_emulator.broker.rocketmq_model.groups import SubscriptionData
    from rocketmq_emulator.broker.operations import ConsumerRegistration, Registration

    a, b = core.connect("10.0.0.1:1"), core.connect("10.0.0.2:2")
    sub = (SubscriptionData("T"),)
    core.register(Registration("client-a", (ConsumerRegistration("G", subscriptions=sub),), ("PG",)), a)
    assert core.topics.get("%RETRY%G") is not None                # the group's retry topic
    assert front_of(core).take_outgoing() == []                             # nobody else to tell
    core.register(Registration("client-b", (ConsumerRegistration("G", subscriptions=sub),)), b)
    [(told, notice)] = front_of(core).take_outgoing()                       # the other member rebalances
    assert told is a and notice.code == 40                        # NOTIFY_CONSUMER_IDS_CHANGED
    assert sorted(core.consumer_ids("G")) == ["client-a", "client-b"]
    queues = [("T", "broker-a", 0), ("T", "broker-a", 1)]
    assert sorted(core.lock_queues("G", "client-a", queues)) == queues
    assert core.lock_queues("G", "client-b", queues) == []        # held by a live client
    core.unlock_queues("G", "client-a", queues)
    assert sorted(core.lock_queues("G", "client-b", queues)) == queues
    core.unregister(b, consumer_group="G")
    assert core.consumer_ids("G") == ["client-a"]
    core.unregister(a, consumer_group="G", producer_group="PG")
    assert core.consumer_ids("G") is None and core.producers["PG"] == {}


def test_routes_and_lookups_without_a_header(core):
    from rocketmq_emulator.broker.operations import BrokerRoute, QueueRoute, TopicRoute

    c = WireClient(core)
    sent = c.send("T", b"keyed", keys="order-7")
    assert core.route("Nope") is None
    core.set_broker_permission(4)                                  # read only: routes say so
    route = core.route("T")
    assert isinstance(route, TopicRoute)
    assert route.queues == (QueueRoute(core.config.broker_name, 4, 4, 4, 0),)
    assert route.brokers == core.brokers() == (BrokerRoute(core.config.broker_cluster_name,
                                                           core.config.broker_name, core.addr),)
    phys = int(sent.ext_fields["msgId"][-16:], 16)
    assert core.message_at(phys) is not None and core.message_at(phys + 1) is None
    [raw] = core.messages_by_key("T", "order-7", 10, 0, core.clock.now_ms())
    assert raw == core.message_at(phys)


def test_topic_updates_without_a_header(core):
    import pytest

    from rocketmq_emulator.broker.fronts.remoting.protocol import RequestRefused
    from rocketmq_emulator.broker.rocketmq_model.topics import TopicConfig

    assert core.update_topic(TopicConfig("Orders", 2, 2, 6)) is None
    assert core.route("Orders").queues[0].read_queue_nums == 2
    for bad, remark in ((TopicConfig("TBW102", 4, 4, 6), "conflict with system topic"),
                        (TopicConfig("Orders", 0, 4, 6), "readQueueNums 0 is out of range"),
                        (TopicConfig("Orders", 4, 4, 8), "perm 8 is not a permission"),
                        (TopicConfig("bad/name", 4, 4, 6), "illegal characters")):
        with pytest.raises(RequestRefused, match=remark):
            core.update_topic(bad)
    assert core.route("Orders").queues[0].read_queue_nums == 2      # nothing changed
