"""Producer.send_async (RocketMQ's send(msg, SendCallback)): many sends in flight on one
connection, results on the client loop; failures reach the callback; bad input raises
at once. Also the in-process transport, so the API is the same on both."""
from __future__ import annotations

import pytest

from rocketmq_emulator.client_sdk import (CONSUME_SUCCESS, EmbeddedBroker, Message, MQClientError, Producer, PushConsumer,
                        RemoteBroker, RemotingConnectError, SendStatus)


def test_a_window_of_async_sends_lands_every_message_once(remote, unique):
    topic = unique("Async")
    r = remote()
    producer = Producer(unique("pg"), r).start()
    results, errors = [], []
    in_flight = [0]

    def done(result, error):
        in_flight[0] -= 1
        (results if error is None else errors).append(result or error)

    for i in range(300):
        if in_flight[0] >= 50:
            r.run_until(lambda: in_flight[0] < 50, "10s")
        in_flight[0] += 1
        producer.send_async(Message(topic, b"a%d" % i, keys=f"k{i}"), done)
    assert in_flight[0] > 0                                  # really in flight, not answered inline
    assert r.run_until(lambda: in_flight[0] == 0, "10s")
    assert errors == [] and len(results) == 300
    assert all(res.status is SendStatus.SEND_OK for res in results)
    assert len({res.msg_id for res in results}) == 300
    assert len({(res.queue.queue_id, res.queue_offset) for res in results}) == 300
    got = []
    consumer = PushConsumer(unique("cg"), r, listener=lambda m, c: (got.extend(x.body for x in m), CONSUME_SUCCESS)[1])
    consumer.subscribe(topic, "*").start()
    assert r.run_until(lambda: len(got) == 300, "10s")
    assert sorted(got) == sorted(b"a%d" % i for i in range(300))
    consumer.shutdown()
    producer.shutdown()


def test_async_send_failures_reach_the_callback(own_server, unique):
    r = RemoteBroker(own_server.address)
    try:
        topic = unique("Lost")
        producer = Producer(unique("pg"), r, retry_times_when_send_failed=1).start()
        producer.send(Message(topic, b"route first"))
        own_server.kill()
        outcomes = []
        producer.send_async(Message(topic, b"lost"), lambda res, err: outcomes.append((res, err)))
        assert r.run_until(lambda: outcomes, "10s")
        [(res, err)] = outcomes
        assert res is None and isinstance(err, RemotingConnectError)
        assert f"127.0.0.1:{own_server.port}" in str(err)
        with pytest.raises(MQClientError, match="blank"):
            producer.send_async(Message(" ", b"x"), lambda res, err: None)
        producer.shutdown()
        with pytest.raises(MQClientError, match="SHUTDOWN_ALREADY"):
            producer.send_async(Message(topic, b"x"), lambda res, err: None)
    finally:
        r.close()


def test_send_async_in_process_too():
    broker = EmbeddedBroker()
    try:
        producer = broker.producer("pg")
        outcomes = []
        producer.send_async(Message("T", b"x", tags="A"), lambda res, err: outcomes.append((res, err)))
        assert outcomes == []                                # never inside send_async
        broker.run_until_idle()
        [(res, err)] = outcomes
        assert err is None and res.status is SendStatus.SEND_OK
        assert [m.body for m in broker.messages("T")] == [b"x"]
    finally:
        broker.close()
