"""PULL_MESSAGE (rocketmq-4x.md §2.5; checklist 25–33) including long polling."""
import pytest

from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode, ResponseCode as RC
from rocketmq_emulator.delay_scheduler import VirtualClock

from .wire import WireClient
from tests.support.remoting import front_of

G = "CG"


@pytest.fixture
def client(core):
    c = WireClient(core)
    c.send("T")  # creates the topic
    assert c.heartbeat(G, ["T"]).code == 0
    return c


def test_found_returns_raw_records_and_all_header_fields(core, client):
    client.send("T", b"second")
    resp = client.pull(G, "T", 0, 0)
    assert resp.code == RC.SUCCESS
    assert set(resp.ext_fields) >= {"suggestWhichBrokerId", "nextBeginOffset", "minOffset", "maxOffset"}
    assert resp.ext_fields["nextBeginOffset"] == "2"
    recs = client.pull_records(G, "T", 0, 0)
    assert [r.queue_offset for r in recs] == [0, 1] and recs[1].body == b"second"


def test_25_pull_at_max_offset_is_19_with_next_begin_equal_offset(core, client):
    resp = client.pull(G, "T", 0, 1)
    assert resp.code == RC.PULL_NOT_FOUND == 19
    assert resp.ext_fields["nextBeginOffset"] == "1"


def test_25_held_with_suspend_until_a_message_arrives(core, client):
    assert client.pull(G, "T", 0, 1, sys_flag=2) is None        # held
    assert front_of(core).take_outgoing() == []
    client.send("T", b"wake")
    out = front_of(core).take_outgoing()
    assert len(out) == 1
    ch, resp = out[0]
    assert ch is client.channel and resp.code == RC.SUCCESS and resp.is_response


def test_25_held_pull_times_out_after_suspend_timeout(core, client):
    req = RemotingCommand.request(RequestCode.PULL_MESSAGE, {
        "consumerGroup": G, "topic": "T", "queueId": 0, "queueOffset": 1, "maxMsgNums": 32, "sysFlag": 2,
        "commitOffset": 0, "suspendTimeoutMillis": 15000, "subVersion": 0})
    assert front_of(core).handle(req, client.channel) is None
    assert core.next_deadline() == core.clock.now_ms() + 15000
    core.advance_clock(14999)
    assert front_of(core).take_outgoing() == []
    core.advance_clock(1)
    [(ch, resp)] = front_of(core).take_outgoing()
    assert resp.code == RC.PULL_NOT_FOUND and resp.opaque == req.opaque


def test_held_pull_ignores_messages_of_other_tags(core, client):
    client.heartbeat(G, ["T"], sub="TagA", sub_version=2)
    client.send("T", b"a", tags="TagA")
    assert client.pull(G, "T", 0, 2, sys_flag=2) is None
    client.send("T", b"b", tags="TagB")
    assert front_of(core).take_outgoing() == []
    client.send("T", b"c", tags="TagA")
    [(_, resp)] = front_of(core).take_outgoing()
    assert resp.code == RC.SUCCESS


def test_26_offset_beyond_max_is_21_with_next_begin_max(core, client):
    resp = client.pull(G, "T", 0, 50)
    assert resp.code == RC.PULL_OFFSET_MOVED == 21
    assert resp.ext_fields["nextBeginOffset"] == "1"


def test_28_empty_queue_is_19_at_0_and_21_otherwise(core, client):
    assert client.pull(G, "T", 3, 0).code == RC.PULL_NOT_FOUND
    resp = client.pull(G, "T", 3, 5)
    assert resp.code == RC.PULL_OFFSET_MOVED and resp.ext_fields["nextBeginOffset"] == "0"


def test_29_all_filtered_by_tag_is_20(core, client):
    client.heartbeat(G, ["T"], sub="TagA", sub_version=2)
    client.send("T", b"b", tags="TagB")
    resp = client.pull(G, "T", 0, 1)
    assert resp.code == RC.PULL_RETRY_IMMEDIATELY == 20
    assert resp.ext_fields["nextBeginOffset"] == "2"


def test_tag_filter_delivers_only_matching(core, client):
    client.heartbeat(G, ["T"], sub="TagA || TagC", sub_version=2)
    for t in ("TagA", "TagB", "TagC"):
        client.send("T", t.encode(), tags=t)
    bodies = [r.body for r in client.pull_records(G, "T", 0, 1)]
    assert bodies == [b"TagA", b"TagC"]


def test_subscription_flag_uses_the_request_expression(core):
    c = WireClient(core)
    c.send("T", b"a", tags="X")
    c.send("T", b"b", tags="Y")
    recs = c.pull_records("nohb", "T", 0, 0, sys_flag=4, subscription="Y")
    assert [r.body for r in recs] == [b"b"]


def test_31_no_heartbeat_is_24(core):
    c = WireClient(core)
    c.send("T")
    resp = c.pull("never-heartbeat", "T", 0, 0)
    assert resp.code == RC.SUBSCRIPTION_NOT_EXIST == 24
    assert "group info not exist" in resp.remark


def test_32_newer_sub_version_is_25(core, client):
    resp = client.pull(G, "T", 0, 0, sub_version=99)
    assert resp.code == RC.SUBSCRIPTION_NOT_LATEST == 25


def test_33_commit_flag_stores_the_offset_before_answering(core, client):
    client.pull(G, "T", 0, 1, sys_flag=1, commit_offset=1)
    assert core.store.query_offset(G, "T", 0) == 1


def test_unknown_topic_is_17(core, client):
    resp = client.pull(G, "FooBar", 0, 0)
    assert resp.code == RC.TOPIC_NOT_EXIST and "topic[FooBar] not exist" in resp.remark


def test_bad_queue_id_is_system_error(core, client):
    assert client.pull(G, "T", 9, 0).code == RC.SYSTEM_ERROR


def test_unreadable_broker_is_no_permission(core, client):
    core.set_broker_permission(2)
    assert client.pull(G, "T", 0, 0).code == RC.NO_PERMISSION


def test_disconnect_drops_held_pulls(core, client):
    assert client.pull(G, "T", 0, 1, sys_flag=2) is None
    core.disconnect(client.channel)
    client2 = WireClient(core, "127.0.0.1:50002")
    client2.send("T")
    assert front_of(core).take_outgoing() == []
