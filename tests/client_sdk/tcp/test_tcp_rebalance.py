"""Two consumers of one group over TCP: the broker's NOTIFY_CONSUMER_IDS_CHANGED (a
broker→client oneway request) makes the first one rebalance at once. The periodic
rebalance is set to an hour, so nothing else can explain the move."""
from __future__ import annotations

from broker.protocol import RequestCode
from client_sdk import CONSUME_SUCCESS, Message, Producer, PushConsumer


def test_second_consumer_joins_and_the_first_gives_up_half_its_queues(remote, unique):
    topic, group = unique("Shared"), unique("shared")
    r = remote()
    producer = Producer(unique("pg"), r).start()
    producer.send(Message(topic, b"creates the topic"))
    got = {"a": [], "b": []}

    def consumer(name):
        c = PushConsumer(group, r, rebalance_interval=3_600_000,
                         listener=lambda msgs, ctx: (got[name].extend(m.queue_id for m in msgs), CONSUME_SUCCESS)[1])
        return c.subscribe(topic, "*")

    first = consumer("a").start()
    notified = []
    transport = first.instance.transport
    handler = transport._handler                      # ClientInstance's; watch what reaches it
    transport.on_request(lambda cmd: (notified.append(cmd), handler(cmd))[1])
    assert r.run_until(lambda: len(first.assigned_queues(topic)) == 4, "10s")

    second = consumer("b").start()                    # a separate client instance and connection
    assert second.instance.transport is not transport
    assert r.run_until(lambda: len(first.assigned_queues(topic)) == 2 and len(second.assigned_queues(topic)) == 2,
                       "10s")
    assert notified and all(cmd.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED for cmd in notified)
    assert notified[0].header("consumerGroup") == group and notified[0].is_oneway
    assert set(first.assigned_queues(topic)).isdisjoint(second.assigned_queues(topic))

    got["a"].clear()
    got["b"].clear()
    for q in producer.publish_queues(topic):
        producer.send(Message(topic, b"to %d" % q.queue_id), queue=q)
    assert r.run_until(lambda: len(got["a"]) + len(got["b"]) == 4, "10s")
    assert sorted(got["a"]) == [mq.queue_id for mq in first.assigned_queues(topic)]
    assert sorted(got["b"]) == [mq.queue_id for mq in second.assigned_queues(topic)]

    second.shutdown()                                 # UNREGISTER_CLIENT: the first takes all back
    assert r.run_until(lambda: len(first.assigned_queues(topic)) == 4, "10s")
    first.shutdown()
    producer.shutdown()
