"""Two consumers in one group share a topic's queues (average allocation); a consumer
joining or leaving moves queues without losing or duplicating messages."""
from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, RECONSUME_LATER, EmbeddedBroker, Message, MessageQueue
from rocketmq_emulator.client_sdk.rebalance import allocate_averagely

MQS = [MessageQueue("T", "broker-a", i) for i in range(8)]


def test_allocate_averagely_contiguous_shares():
    cids = ["c1", "c2", "c3"]
    shares = [allocate_averagely(c, MQS, cids) for c in cids]
    assert [[mq.queue_id for mq in s] for s in shares] == [[0, 1, 2], [3, 4, 5], [6, 7]]
    assert allocate_averagely("c9", MQS, cids) == []
    assert [mq.queue_id for mq in allocate_averagely("b", MQS[:2], ["a", "b", "c"])] == [1]
    assert allocate_averagely("c", MQS[:2], ["a", "b", "c"]) == []


def test_two_consumers_in_one_group_share_the_queues(rocketmq_broker, rocketmq_producer, rocketmq_consumer,
                                                     time_travel):
    rocketmq_broker.create_topic("Orders", 4)
    got = {"a": [], "b": []}

    def listener_for(name):
        def listener(msgs, context):
            got[name].extend((context.message_queue.queue_id, m.text) for m in msgs)
            return CONSUME_SUCCESS
        return listener

    a = rocketmq_consumer("billing", "Orders", listener=listener_for("a"))
    assert len(a.assigned_queues("Orders")) == 4
    b = rocketmq_consumer("billing", "Orders", listener=listener_for("b"))
    qa, qb = a.assigned_queues("Orders"), b.assigned_queues("Orders")
    assert len(qa) == len(qb) == 2 and not set(qa) & set(qb)                  # NOTIFY_CONSUMER_IDS_CHANGED
    assert a.assigned_queues("%RETRY%billing") or b.assigned_queues("%RETRY%billing")
    producer = rocketmq_producer()
    for i in range(40):
        producer.send(Message("Orders", f"m{i}"))
    time_travel("1s")
    assert {q for q, _ in got["a"]} == {mq.queue_id for mq in qa}
    assert {q for q, _ in got["b"]} == {mq.queue_id for mq in qb}
    assert sorted(t for _, t in got["a"] + got["b"]) == sorted(f"m{i}" for i in range(40))   # each exactly once


def test_a_consumer_leaving_hands_its_queues_over_without_loss(rocketmq_broker, rocketmq_producer,
                                                               rocketmq_consumer, time_travel):
    rocketmq_broker.create_topic("Orders", 4)
    got = []
    listener = lambda msgs, ctx: got.extend(m.text for m in msgs) or CONSUME_SUCCESS
    a = rocketmq_consumer("billing", "Orders", listener=listener)
    b = rocketmq_consumer("billing", "Orders", listener=listener)
    producer = rocketmq_producer()
    for i in range(8):
        producer.send(Message("Orders", f"before{i}"))
    time_travel("1s")
    b.shutdown()                                          # persists offsets, unregisters -> a rebalances
    rocketmq_broker.run_until_idle()
    assert len(a.assigned_queues("Orders")) == 4
    for i in range(8):
        producer.send(Message("Orders", f"after{i}"))
    time_travel("1s")
    assert sorted(got) == sorted([f"before{i}" for i in range(8)] + [f"after{i}" for i in range(8)])


def _scenario(pid):
    with EmbeddedBroker(pid=pid) as broker:
        broker.create_topic("Orders", 4)
        trace = []

        def listener(msgs, context):
            trace.extend((broker.now_ms, m.msg_id, m.reconsume_times, context.message_queue.queue_id) for m in msgs)
            return CONSUME_SUCCESS if msgs[0].body[-1] % 3 else RECONSUME_LATER

        broker.push_consumer("g", "Orders", listener=listener)
        broker.push_consumer("g", "Orders", listener=listener)
        producer = broker.producer()
        for i in range(30):
            producer.send(Message("Orders", bytes([i])))
        broker.advance("10m")
        return trace, [(e.kind, e.time_ms, e.topic, e.queue_offset) for e in broker.events]


def test_runs_are_deterministic_on_the_virtual_clock():
    first, second = _scenario(pid=4242), _scenario(pid=4242)
    assert first == second and len(first[0]) > 30
