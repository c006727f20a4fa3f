"""The TCP transport's contract (client_sdk/transport/base.py) against a real `serve`:
pipelined requests matched by opaque, oneway, timeouts, close() and a server that dies
under the client, and routing through a separate name server to several brokers."""
from __future__ import annotations

import threading

import pytest

from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.client_sdk import (CONSUME_SUCCESS, RECONSUME_LATER, Message, MQClientError, Producer, PushConsumer,
                        RemoteBroker, RemotingConnectError, RemotingTimeoutError)
from rocketmq_emulator.client_sdk.api import BrokerAPI
from tests.support.processes import EmulatorProcess

from .name_server_stub import NameServerStub


def held_pull(group, topic, queue_id=0):
    """A PULL_MESSAGE the broker holds (long polling) while the queue is empty and its
    virtual clock stands still: a request whose reply we control."""
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, {
        "consumerGroup": group, "topic": topic, "queueId": queue_id, "queueOffset": 0, "maxMsgNums": 32,
        "sysFlag": 6, "commitOffset": 0, "suspendTimeoutMillis": 15000, "subVersion": 0, "subscription": "*"})


def prepared_queue(remote, unique):
    """A topic and a consumer group the broker knows, with an empty queue 0."""
    r = remote()
    topic, group = unique("Held"), unique("holder")
    producer = Producer(unique("pg"), r).start()
    producer.send(Message(topic, b"x"), queue=producer.publish_queues(topic)[1])   # creates the topic
    t = r.connect()
    BrokerAPI(t).heartbeat({"clientID": "127.0.0.1@held", "producerDataSet": [], "consumerDataSet": [
        {"groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
         "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "unitMode": False, "subscriptionDataSet": []}]})
    producer.shutdown()
    return r, t, topic, group


def in_thread(fn):
    """Run fn in a thread; returns (thread, box) where box gets 'value' or 'error'."""
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc
    th = threading.Thread(target=run, daemon=True)
    th.start()
    return th, box


def test_pipelined_requests_are_matched_by_opaque(remote, unique):
    r = remote()
    topic = unique("Pipe")
    producer = Producer(unique("pg"), r).start()
    producer.send(Message(topic, b"creates the topic"), queue=None)
    queues = producer.publish_queues(topic)
    for q in queues:
        for _ in range(10 * (q.queue_id + 1)):          # the queues end with different sizes
            producer.send(Message(topic, b"m"), queue=q)
    t = r.connect()
    sizes = {q.queue_id: BrokerAPI(t).get_max_offset(topic, q.queue_id, q.broker_name) for q in queues}
    assert len(set(sizes.values())) == len(queues)
    answers = []
    for i in range(200):                                 # 200 requests in flight on one connection
        qid = i % len(queues)
        cmd = RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": qid})
        t.request_async(cmd, lambda resp, err, qid=qid, op=cmd.opaque: answers.append((qid, op, resp, err)))
    assert answers == []                                 # never inside request_async
    assert r.run_until(lambda: len(answers) == 200, "10s")
    for qid, opaque, resp, err in answers:
        assert err is None and resp.opaque == opaque and resp.is_response
        assert resp.header_int("offset") == sizes[qid]
    producer.shutdown()


def test_oneway_offset_update_then_query(remote, unique):
    r, t, topic, group = prepared_queue(remote, unique)
    api = BrokerAPI(t)
    api.update_consumer_offset_oneway(group, topic, 1, 1, "broker-a")
    # The oneway frame is ahead of the query on the same connection, so the query sees it.
    assert api.query_consumer_offset(group, topic, 1, "broker-a") == 1


def test_a_request_without_reply_times_out_and_the_connection_stays_usable(server, remote, unique):
    r, t, topic, group = prepared_queue(remote, unique)
    with pytest.raises(RemotingTimeoutError, match=r"timeout, 200\(ms\)"):
        t.request(held_pull(group, topic), timeout_ms=200)
    errors = []
    t.request_async(held_pull(group, topic), lambda resp, err: errors.append(err), timeout_ms=200)
    assert r.run_until(lambda: errors, "10s")
    assert isinstance(errors[0], RemotingTimeoutError)
    r.advance_server_clock("15s")          # the broker now answers both held pulls: late replies, dropped
    r.run_for("100ms")
    assert len(errors) == 1                # the callback ran once
    reply = t.request(RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": 1}))
    assert reply.code == ResponseCode.SUCCESS and reply.header_int("offset") == 1


def test_close_fails_pending_requests_and_refuses_new_ones(remote, unique):
    r, t, topic, group = prepared_queue(remote, unique)
    errors = []
    t.request_async(held_pull(group, topic), lambda resp, err: errors.append((resp, err)), timeout_ms=60000)
    th, box = in_thread(lambda: t.request(held_pull(group, topic), timeout_ms=60000))
    assert r.run_until(lambda: sum(len(c.pending) for c in t._conns.values()) == 2, "10s")
    t.close()
    th.join(10)
    assert not th.is_alive()
    assert isinstance(box.get("error"), RemotingConnectError) and "closed" in str(box["error"])
    assert r.run_until(lambda: errors, "10s")
    assert errors[0][0] is None and isinstance(errors[0][1], RemotingConnectError)
    assert t.closed
    with pytest.raises(RemotingConnectError, match="closed"):
        t.request(RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": 1}))
    late = []
    t.request_async(held_pull(group, topic), lambda resp, err: late.append(err))
    assert late == []
    assert r.run_until(lambda: late, "10s") and isinstance(late[0], RemotingConnectError)


def test_server_killed_under_the_client_fails_pending_requests_without_hanging(own_server, unique):
    r = RemoteBroker(own_server.address)
    try:
        topic = unique("Doomed")
        got = []
        producer = Producer(unique("pg"), r).start()
        producer.send(Message(topic, b"before"))
        consumer = PushConsumer(unique("cg"), r, listener=lambda m, c: (got.extend(m), CONSUME_SUCCESS)[1])
        consumer.subscribe(topic, "*").start()
        assert r.run_until(lambda: got, "10s")
        t = consumer.instance.transport
        group = consumer.group
        waiting = []
        t.request_async(held_pull(group, topic, 1), lambda resp, err: waiting.append(err), timeout_ms=60000)
        th, box = in_thread(lambda: t.request(held_pull(group, topic, 2), timeout_ms=60000))
        assert r.run_until(lambda: sum(len(c.pending) for c in t._conns.values()) >= 2, "10s")

        own_server.kill()

        th.join(10)
        assert not th.is_alive()
        assert isinstance(box.get("error"), RemotingConnectError)
        assert "closed by the peer" in str(box["error"]) or "broken" in str(box["error"])
        assert r.run_until(lambda: waiting, "10s") and isinstance(waiting[0], RemotingConnectError)
        # New requests fail at once with a readable error (reconnect refused), no hang.
        with pytest.raises(MQClientError, match=f"127.0.0.1:{own_server.port}"):
            producer.send(Message(topic, b"after"))
        r.run_for("100ms")                 # the consumer's own pulls failed too; its loop goes on
        consumer.shutdown()
        producer.shutdown()
    finally:
        r.close()


def test_a_separate_name_server_and_two_brokers(tmp_path, unique):
    """Routes from a name server that serves nothing else, pointing at two brokers:
    sends spread over both, the consumer heartbeats and pulls from both, and a failed
    message is sent back to the broker it came from."""
    conf = tmp_path / "broker-b.conf"
    conf.write_text("brokerName=broker-b\n")
    a = EmulatorProcess(tmp_path / "a", "--clock", "virtual").start()
    b = EmulatorProcess(tmp_path / "b", "--clock", "virtual", "--config", str(conf)).start()
    ns = NameServerStub([a.port, b.port])
    r = RemoteBroker(ns.address)
    try:
        topic, group = unique("Spread"), unique("spread")
        producer = Producer(unique("pg"), r).start()
        results = [producer.send(Message(topic, b"%d" % i)) for i in range(16)]
        assert {res.queue.broker_name for res in results} == {"broker-a", "broker-b"}
        assert len(producer.publish_queues(topic)) == 8                     # 4 queues on each broker
        failed_once = set()
        got = []

        def listener(msgs, ctx):
            m = msgs[0]
            got.append((m.body, m.reconsume_times))
            if m.body in (b"3", b"4") and m.body not in failed_once:
                failed_once.add(m.body)
                return RECONSUME_LATER
            return CONSUME_SUCCESS

        consumer = PushConsumer(group, r, listener=listener)
        consumer.subscribe(topic, "*").start()
        assert r.run_until(lambda: len(got) == 16, "10s")
        assert {mq.broker_name for mq in consumer.assigned_queues(topic)} == {"broker-a", "broker-b"}
        assert r.run_until(lambda: consumer.stats.send_back_ok == 2, "10s")
        for srv in (a, b):
            r2 = RemoteBroker(srv.address)
            r2.advance_server_clock("10s")
            r2.close()
        assert r.run_until(lambda: len(got) == 18, "10s")
        assert sorted(x for x in got if x[1] == 1) == [(b"3", 1), (b"4", 1)]
        assert set(ns.codes) <= {RequestCode.GET_ROUTEINFO_BY_TOPIC, RequestCode.GET_BROKER_CLUSTER_INFO}
        assert consumer.instance.transport.brokers == {"broker-a": a.address, "broker-b": b.address}
        consumer.shutdown()
        producer.shutdown()
    finally:
        r.close()
        ns.close()
        a.stop()
        b.stop()


def test_garbage_from_the_server_closes_the_connection_with_a_clear_error():
    """A peer that answers with a frame length of 1 (below the minimum of 4)."""
    import socket

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve():
        conn, _ = listener.accept()
        conn.recv(65536)
        conn.sendall(b"\x00\x00\x00\x01garbage")
        conn.recv(65536)                                  # until the client hangs up
        conn.close()
    th = threading.Thread(target=serve, daemon=True)
    th.start()
    r = RemoteBroker(f"127.0.0.1:{port}")
    try:
        t = r.connect()
        with pytest.raises(RemotingConnectError, match=r"broken: frame length 1 is below the minimum"):
            t.request(RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}), timeout_ms=10000)
    finally:
        r.close()
        listener.close()
        th.join(10)
