"""Checklist facts on the wire, through a real socket to a real server."""
import json
import struct

from rocketmq_emulator.broker.fronts.remoting.protocol import EMULATOR_CLOCK_ADVANCE, RemotingCommand, RequestCode as RQ, ResponseCode as RC
from rocketmq_emulator.broker.fronts.remoting.protocol.codec import encode
from rocketmq_emulator.store.records import iter_records

from tests.support.remoting import RawClient


def send_req(topic, body=b"x", **props):
    p = "\u0002".join(f"{k}\u0001{v}" for k, v in props.items())
    return RemotingCommand.request(RQ.SEND_MESSAGE_V2, {
        "a": "PG", "b": topic, "c": "TBW102", "d": 4, "e": 0, "f": 0, "g": 1, "h": 0, "i": p}, body)


def test_5_7_response_opaque_and_unknown_code(raw):
    c = raw()
    req = RemotingCommand.request(7777)
    resp = c.call(req)
    assert resp.opaque == req.opaque and resp.is_response
    assert resp.code == RC.REQUEST_CODE_NOT_SUPPORTED and "not supported" in resp.remark


def test_6_35_oneway_gets_no_reply_but_is_applied(raw, virtual_server):
    c = raw()
    assert c.call(send_req("T")).code == 0
    hb = {"clientID": "x@1", "consumerDataSet": [{"groupName": "G", "subscriptionDataSet": [{"topic": "T"}]}]}
    assert c.call(RemotingCommand.request(RQ.HEART_BEAT, None, json.dumps(hb).encode())).code == 0
    c.send(RemotingCommand.request(RQ.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "G", "topic": "T", "queueId": 0,
                                                               "commitOffset": 1}, oneway=True))
    resp = c.call(RemotingCommand.request(RQ.QUERY_CONSUMER_OFFSET, {"consumerGroup": "G", "topic": "T", "queueId": 0}))
    assert resp.ext_fields["offset"] == "1"     # the oneway update landed, and produced no frame of its own


def test_8_json_header_shape_of_a_reply(virtual_server):
    c = RawClient(virtual_server.port)
    c.send(send_req("T"))
    data = b""
    while len(data) < 8 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
        data += c.sock.recv(65536)
    total, mark = struct.unpack(">ii", data[:8])
    header = json.loads(data[8:8 + (mark & 0xFFFFFF)])
    assert mark >> 24 == 0
    assert list(header) == sorted(header)              # fastjson's alphabetical keys
    assert header["serializeTypeCurrentRPC"] == "JSON" and header["flag"] == 1
    assert all(isinstance(v, str) for v in header["extFields"].values())
    c.close()


def test_extfields_numbers_and_booleans_are_accepted(virtual_server):
    c = RawClient(virtual_server.port)
    raw_header = json.dumps({"code": 310, "flag": 0, "language": "JAVA", "opaque": 7, "serializeTypeCurrentRPC": "JSON",
                             "version": 409, "extFields": {"a": "PG", "b": "T", "c": "TBW102", "d": 4, "e": 0,
                                                           "f": 0, "g": 1, "h": 0, "i": "", "k": False}}).encode()
    c.send_bytes(struct.pack(">ii", 4 + len(raw_header) + 3, len(raw_header)) + raw_header + b"abc")
    resp = c.recv()
    assert resp.opaque == 7 and resp.code == 0
    c.close()


def test_rocketmq_binary_header_gets_a_binary_reply(raw):
    c = raw()
    req = send_req("T")
    req.serialize_type = 1
    resp = c.call(req)
    assert resp.code == 0 and resp.serialize_type == 1


def test_send_pull_and_long_poll_over_the_wire(raw, virtual_server):
    producer, consumer = raw(), raw()
    assert producer.call(send_req("T", b"first")).code == 0
    hb = {"clientID": "c@1", "consumerDataSet": [{"groupName": "G", "messageModel": "CLUSTERING",
                                                  "subscriptionDataSet": [{"topic": "T", "subString": "*"}]}]}
    assert consumer.call(RemotingCommand.request(RQ.HEART_BEAT, None, json.dumps(hb).encode())).code == 0
    pull = RemotingCommand.request(RQ.PULL_MESSAGE, {"consumerGroup": "G", "topic": "T", "queueId": 0, "queueOffset": 1,
                                                     "maxMsgNums": 32, "sysFlag": 2, "commitOffset": 0,
                                                     "suspendTimeoutMillis": 15000, "subVersion": 0})
    consumer.send(pull)                                  # held: nothing at offset 1 yet
    assert producer.call(send_req("T", b"second")).code == 0
    resp = consumer.recv()
    assert resp.opaque == pull.opaque and resp.code == 0
    assert [r.body for r in iter_records(resp.body)] == [b"second"]


def test_a_held_pull_on_a_virtual_clock_server_is_answered_in_bounded_real_time(tmp_path):
    """Virtual time may stand still for minutes while a real client's pull times out in
    real time (ali-ons: 30 s): the server answers a held pull PULL_NOT_FOUND after its
    real-time bound even though no virtual time passed, and a message arriving first
    still releases a hold at once."""
    from rocketmq_emulator.broker.core import BrokerCore
    from rocketmq_emulator.delay_scheduler import VirtualClock

    from tests.support.remoting import ServerThread
    core = BrokerCore.open(tmp_path / "s", VirtualClock())
    srv = ServerThread(core, virtual_hold_limit_s=0.1)
    try:
        consumer = RawClient(srv.port)
        consumer.sock.settimeout(5)                      # bounded: the reply is due in 0.1-0.2 s
        assert consumer.call(send_req("T", b"first")).code == 0
        pull = RemotingCommand.request(RQ.PULL_MESSAGE, {
            "consumerGroup": "G", "topic": "T", "queueId": 0, "queueOffset": 1, "maxMsgNums": 32,
            "sysFlag": 2 | 4, "commitOffset": 0, "suspendTimeoutMillis": 15000, "subVersion": 0,
            "subscription": "*"})
        now_before = srv.call_in_loop(core.clock.now_ms)
        resp = consumer.call(pull)
        assert resp.code == RC.PULL_NOT_FOUND and resp.header("nextBeginOffset") == "1"
        assert srv.call_in_loop(core.clock.now_ms) == now_before  # no virtual time passed
        consumer.close()
    finally:
        srv.stop()
        core.close()


def test_garbage_closes_only_that_connection(raw, virtual_server):
    good, bad = raw(), raw()
    assert good.call(send_req("T", b"before")).code == 0
    bad.send_bytes(b"\x00\x00\x00\x10\x00\x00\x00\xffnot json at all!")
    assert bad.closed_by_server()
    assert good.call(send_req("T", b"after")).code == 0
    stored = virtual_server.call_in_loop(lambda: virtual_server.core.store.max_offset("T", 0))
    assert stored == 2


def test_oversized_frame_is_refused(tmp_path):
    from rocketmq_emulator.broker.core import BrokerCore
    from rocketmq_emulator.delay_scheduler import VirtualClock

    from tests.support.remoting import ServerThread
    core = BrokerCore.open(tmp_path / "s", VirtualClock())
    srv = ServerThread(core, max_frame_size=1024)
    try:
        c = RawClient(srv.port)
        c.send_bytes(struct.pack(">ii", 5000, 20) + b"{}" * 10)
        assert c.closed_by_server()
        ok = RawClient(srv.port)
        assert ok.call(send_req("T")).code == 0
        ok.close()
    finally:
        srv.stop()
        core.close()


def test_clock_advance_over_the_wire_delivers_due_messages(raw, virtual_server):
    c = raw()
    assert c.call(send_req("T", b"later", DELAY="3")).code == 0
    resp = c.call(RemotingCommand.request(EMULATOR_CLOCK_ADVANCE, {"duration": "10s"}))
    assert resp.code == 0
    assert virtual_server.call_in_loop(lambda: virtual_server.core.store.max_offset("T", 0)) == 1


def test_clock_advance_is_refused_by_a_real_clock_server(real_server):
    c = RawClient(real_server.port)
    resp = c.call(RemotingCommand.request(EMULATOR_CLOCK_ADVANCE, {"duration": "10s"}))
    assert resp.code == RC.SYSTEM_ERROR and "real clock" in resp.remark
    c.close()


def test_a_real_clock_server_delivers_due_messages_and_expires_holds_on_its_own(tmp_path):
    """The server's one timer, armed at the core's next deadline, fires with no request
    in between: a delayed message (level 1 = 200 ms here) reaches a pull held for it,
    and a hold with nothing to wake it ends PULL_NOT_FOUND at its suspend timeout."""
    from rocketmq_emulator.broker.config import BrokerConfig
    from rocketmq_emulator.broker.core import BrokerCore
    from rocketmq_emulator.delay_scheduler import SystemClock

    from tests.support.remoting import ServerThread
    core = BrokerCore.open(tmp_path / "s", SystemClock(), BrokerConfig(message_delay_level="200ms 400ms"))
    srv = ServerThread(core)
    try:
        c = RawClient(srv.port)
        c.sock.settimeout(5)                               # bounded: both replies are due within 0.3 s

        def held_pull(topic, offset, suspend_ms):
            return RemotingCommand.request(RQ.PULL_MESSAGE, {
                "consumerGroup": "G", "topic": topic, "queueId": 0, "queueOffset": offset, "maxMsgNums": 32,
                "sysFlag": 2 | 4, "commitOffset": 0, "suspendTimeoutMillis": suspend_ms, "subVersion": 0,
                "subscription": "*"})
        assert c.call(send_req("Later", b"due in 200 ms", DELAY="1")).code == 0
        assert c.call(send_req("Idle", b"already read")).code == 0
        waiting, idle = held_pull("Later", 0, 15000), held_pull("Idle", 1, 300)
        c.send(waiting)
        c.send(idle)
        replies = {r.opaque: r for r in (c.recv(), c.recv())}
        assert replies[idle.opaque].code == RC.PULL_NOT_FOUND          # its own 300 ms timeout
        got = replies[waiting.opaque]                                  # released by the arrival
        assert got.code == RC.SUCCESS
        assert [r.body for r in iter_records(got.body)] == [b"due in 200 ms"]
        c.close()
    finally:
        srv.stop()
        core.close()


def test_a_heartbeat_with_enums_as_ordinals_is_answered_over_tcp(raw):
    """The C++ core's heartbeat shape (ConsumeType, MessageModel and ConsumeFromWhere as
    numbers) through the codec and the TCP front: registered, as the Java broker does."""
    from rocketmq_emulator.broker.fronts.remoting.protocol import RequestCode, ResponseCode

    body = {"clientID": "127.0.0.1@cpp", "producerDataSet": [],
            "consumerDataSet": [{"groupName": "billing", "consumeType": 1, "messageModel": 1,
                                 "consumeFromWhere": 4, "unitMode": False,
                                 "subscriptionDataSet": [{"topic": "T", "subString": "*", "subVersion": 1}]}]}
    client = raw()
    reply = client.call(RemotingCommand.request(RequestCode.HEART_BEAT, None, json.dumps(body).encode()))
    assert reply.code == ResponseCode.SUCCESS, reply.remark
    listed = client.call(RemotingCommand.request(RequestCode.GET_CONSUMER_CONNECTION_LIST,
                                                 {"consumerGroup": "billing"}))
    assert listed.code == ResponseCode.SUCCESS
    doc = json.loads(listed.body)
    assert (doc["consumeType"], doc["messageModel"], doc["consumeFromWhere"]) == (
        "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_FIRST_OFFSET")
