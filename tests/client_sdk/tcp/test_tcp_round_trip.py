"""Producer → `serve` → PushConsumer over TCP: tags filter, keys and properties survive,
ids match; and the namesrv_addr form, where each client runs its own background loop."""
from __future__ import annotations


import pytest

from rocketmq_emulator.client_sdk import (CONSUME_SUCCESS, Message, MQClientError, Producer, PushConsumer, RemoteBroker,
                        RemotingConnectError, SendStatus)
from rocketmq_emulator.client_sdk.api import BrokerAPI
from tests.support.processes import free_port, wait_for


def test_produce_and_consume_with_tags_and_keys(remote, unique):
    topic, group = unique("Orders"), unique("billing")
    r = remote()
    producer = Producer(unique("pg"), r).start()
    sent = {}
    for i in range(20):
        tag = "TagA" if i % 2 == 0 else "TagB"
        result = producer.send(Message(topic, b"order-%d" % i, tags=tag, keys=[f"order-{i}", f"customer-{i % 3}"],
                                       properties={"region": "eu"}))
        assert result.status is SendStatus.SEND_OK
        assert result.queue.topic == topic and result.queue_offset >= 0
        sent[result.msg_id] = (i, tag)
    assert len(sent) == 20

    got = []
    consumer = PushConsumer(group, r, listener=lambda msgs, ctx: (got.extend(msgs), CONSUME_SUCCESS)[1])
    consumer.subscribe(topic, "TagA").start()
    assert r.run_until(lambda: len(got) >= 10, "10s")
    r.run_for("200ms")                                   # nothing more may come: TagB is filtered out

    assert sorted(m.body for m in got) == sorted(b"order-%d" % i for i in range(0, 20, 2))
    for m in got:
        i, tag = sent[m.msg_id]
        assert m.body == b"order-%d" % i and m.tags == tag == "TagA"
        assert m.keys == f"order-{i} customer-{i % 3}"
        assert m.user_properties == {"region": "eu"}
        assert m.topic == topic and m.reconsume_times == 0
    consumer.shutdown()
    producer.shutdown()


def test_namesrv_addr_clients_run_their_own_loops(server, unique):
    topic = unique("Events")
    got = []
    consumer = PushConsumer(unique("cg"), namesrv_addr=server.address,
                            listener=lambda msgs, ctx: (got.extend(m.body for m in msgs), CONSUME_SUCCESS)[1])
    consumer.subscribe(topic, "*")
    producer = Producer(unique("pg"), namesrv_addr=server.address)
    with producer:
        producer.send(Message(topic, b"e0"))             # creates the topic before the consumer looks it up
        with consumer:
            for i in range(1, 30):
                producer.send(Message(topic, b"e%d" % i))
            assert wait_for(lambda: len(got) >= 30), f"only {len(got)} of 30 consumed"
            assert sorted(got) == sorted(b"e%d" % i for i in range(30))
    # The consumer's shutdown persisted its offsets to the broker.
    check = RemoteBroker(server.address)
    try:
        api = BrokerAPI(check.connect())
        api.get_topic_route(topic)
        committed = sum(api.query_consumer_offset(consumer.group, topic, q, "broker-a") for q in range(4))
        assert committed == 30
    finally:
        check.close()


def test_bad_addresses_fail_with_a_clear_error(unique):
    with pytest.raises(MQClientError, match="HOST:PORT"):
        Producer(unique("pg"), namesrv_addr="localhost")
    with pytest.raises(MQClientError, match="either a broker or namesrv_addr"):
        PushConsumer(unique("cg"), RemoteBroker("127.0.0.1:9876"), namesrv_addr="127.0.0.1:9876")
    port = free_port()                                   # nothing listens there
    producer = Producer(unique("pg"), namesrv_addr=f"127.0.0.1:{port}")
    with pytest.raises(RemotingConnectError, match=f"127.0.0.1:{port}"):
        producer.start()


def test_stop_ends_a_background_loop_that_is_never_idle(server):
    r = RemoteBroker(server.address)
    spins = [0]
    keep_spinning = [True]

    def spin():                                          # a task that always queues another
        spins[0] += 1
        if keep_spinning[0]:
            r.runtime.call_soon_threadsafe(spin)
    r.run_in_background()
    assert r.call(lambda: "on the loop") == "on the loop"
    r.runtime.call_soon_threadsafe(spin)
    assert wait_for(lambda: spins[0] > 100)
    loop_thread = r._thread
    r.stop()
    assert not r.in_background and not loop_thread.is_alive()
    # The loop can be driven from this thread afterwards; nothing of the stop leaks into it.
    keep_spinning[0] = False
    seen = spins[0]
    assert r.run_until(lambda: spins[0] == seen + 1, "10s")
    r.close()
