"""Admin input from the wire (issue 17, item 7): UPDATE_AND_CREATE_TOPIC refuses system
topics as 4.9.8's TopicValidator does ("The topic[X] is conflict with system topic.",
SYSTEM_ERROR) and range-checks perm and queue counts; every request that names a
group refuses a name outside RocketMQ's rules (^[%|a-zA-Z0-9_-]+$, at most 120 chars:
develop's TopicValidator.validateGroup, which keeps %RETRY%<group> a legal topic);
malformed bodies get an error reply and one WARN line, never a traceback."""
import json
import logging

import pytest

from rocketmq_emulator.broker.fronts.remoting.protocol import RequestCode as RQ, ResponseCode as RC

SYSTEM_TOPICS = ["TBW102", "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRACE_TOPIC", "RMQ_SYS_TRANS_HALF_TOPIC",
                 "rmq_sys_anything", "BenchmarkTest", "OFFSET_MOVED_EVENT", "SELF_TEST_TOPIC",
                 "TRANS_CHECK_MAX_TIME_TOPIC", "DefaultCluster", "broker-a", "DefaultCluster_REPLY_TOPIC"]


def create_topic(client, topic, **fields):
    ext = {"topic": topic, "readQueueNums": 4, "writeQueueNums": 4, "perm": 6, "topicFilterType": "SINGLE_TAG",
           "topicSysFlag": 0, "order": False}
    ext.update(fields)
    return client.call(RQ.UPDATE_AND_CREATE_TOPIC, ext)


@pytest.mark.parametrize("topic", SYSTEM_TOPICS)
def test_system_topics_cannot_be_created_or_changed_over_the_wire(core, client, topic):
    before = core.topics.get(topic)
    resp = create_topic(client, topic, perm=2, readQueueNums=1, writeQueueNums=1)
    assert (resp.code, resp.remark) == (RC.SYSTEM_ERROR, f"The topic[{topic}] is conflict with system topic.")
    assert core.topics.get(topic) == before


@pytest.mark.parametrize("topic", ["%RETRY%billing", "%DLQ%billing"])
def test_retry_and_dlq_topics_stay_updatable_as_upstream(core, client, topic):
    """Operators make a DLQ readable with `mqadmin updateTopic -t %DLQ%g -p 6`."""
    resp = create_topic(client, topic, perm=6, readQueueNums=1, writeQueueNums=1)
    assert resp.code == RC.SUCCESS, resp.remark
    assert core.topics.get(topic).perm == 6


def test_an_attempt_on_tbw102_leaves_auto_creation_working(client):
    create_topic(client, "TBW102", perm=6, readQueueNums=8, writeQueueNums=8)
    resp = client.send("BrandNewTopic")
    assert resp.code == RC.SUCCESS, resp.remark


@pytest.mark.parametrize("perm", [-1, 8, 16, 255, "1" + "0" * 400])
def test_perm_must_be_a_permission_value(core, client, perm):
    resp = create_topic(client, "Orders", perm=perm)
    assert resp.code == RC.SYSTEM_ERROR
    assert "perm" in resp.remark and "0 to 7" in resp.remark
    assert len(resp.remark) < 200           # a 401-digit value is not echoed whole
    assert core.topics.get("Orders") is None


@pytest.mark.parametrize("field", ["readQueueNums", "writeQueueNums"])
@pytest.mark.parametrize("count", [-1, 0, 1025, 100_000])
def test_queue_counts_are_range_checked(core, client, field, count):
    resp = create_topic(client, "Orders", **{field: count})
    assert resp.code == RC.SYSTEM_ERROR
    assert field in resp.remark and "1 to 1024" in resp.remark
    assert core.topics.get("Orders") is None


def test_valid_topic_updates_still_succeed(core, client):
    assert create_topic(client, "Orders", readQueueNums=1, writeQueueNums=1024, perm=7).code == RC.SUCCESS
    assert create_topic(client, "Orders", readQueueNums=2, writeQueueNums=2, perm=0).code == RC.SUCCESS
    tc = core.topics.get("Orders")
    assert (tc.read_queue_nums, tc.write_queue_nums, tc.perm) == (2, 2, 0)


def test_create_topic_from_python_range_checks_too(core):
    with pytest.raises(ValueError, match="1 to 1024"):
        core.create_topic("Orders", 0)
    with pytest.raises(ValueError, match="0 to 7"):
        core.create_topic("Orders", 4, perm=9)
    assert core.topics.get("Orders") is None


BAD_GROUPS = ["../../evil", "a b", "x" * 121, "x" * 200, "", "grp\u00e9", "a/b", "a.b"]
BAD_GROUP_IDS = ["dotdot", "space", "121chars", "200chars", "empty", "non-ascii", "slash", "dot"]


def _heartbeat_body(consumer_group="G", producer_group="PG"):
    return json.dumps({"clientID": "127.0.0.1@test",
                       "producerDataSet": [{"groupName": producer_group}],
                       "consumerDataSet": [{"groupName": consumer_group, "consumeType": "CONSUME_PASSIVELY",
                                            "messageModel": "CLUSTERING",
                                            "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET",
                                            "subscriptionDataSet": [{"topic": "T", "subString": "*"}]}]}).encode()


def _lock_body(group):
    return json.dumps({"consumerGroup": group, "clientId": "c1",
                       "mqSet": [{"topic": "T", "brokerName": "broker-a", "queueId": 0}]}).encode()


# (request code, header, body) for every request of the 4.x protocol that names a group
GROUP_REQUESTS = {
    "heartbeat-consumer": lambda g: (RQ.HEART_BEAT, None, _heartbeat_body(consumer_group=g)),
    "heartbeat-producer": lambda g: (RQ.HEART_BEAT, None, _heartbeat_body(producer_group=g)),
    "unregister-consumer": lambda g: (RQ.UNREGISTER_CLIENT, {"clientID": "c1", "consumerGroup": g}, b""),
    "unregister-producer": lambda g: (RQ.UNREGISTER_CLIENT, {"clientID": "c1", "producerGroup": g}, b""),
    "consumer-list": lambda g: (RQ.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": g}, b""),
    "lock": lambda g: (RQ.LOCK_BATCH_MQ, None, _lock_body(g)),
    "unlock": lambda g: (RQ.UNLOCK_BATCH_MQ, None, _lock_body(g)),
    "query-offset": lambda g: (RQ.QUERY_CONSUMER_OFFSET, {"consumerGroup": g, "topic": "T", "queueId": 0}, b""),
    "update-offset": lambda g: (RQ.UPDATE_CONSUMER_OFFSET,
                                {"consumerGroup": g, "topic": "T", "queueId": 0, "commitOffset": 1}, b""),
}


# UNREGISTER_CLIENT's groups are nullable: an empty one means "none" there
GROUP_CASES = [pytest.param(kind, group, id=f"{kind}-{gid}") for kind in sorted(GROUP_REQUESTS)
               for group, gid in zip(BAD_GROUPS, BAD_GROUP_IDS) if group or not kind.startswith("unregister")]


@pytest.mark.parametrize("kind, group", GROUP_CASES)
def test_every_request_naming_a_group_refuses_an_illegal_name(core, client, caplog, kind, group):
    create_topic(client, "T")
    code, ext, body = GROUP_REQUESTS[kind](group)
    topics_before = set(core.topics.table)
    with caplog.at_level(logging.INFO, logger="broker"):
        resp = client.call(code, ext, body)
    assert resp.code == RC.SYSTEM_ERROR
    assert "The specified group" in resp.remark
    assert set(core.topics.table) == topics_before            # no %RETRY%<bad> topic
    assert group not in core.groups.table
    assert core.consumers.get(group) is None
    assert core.store.query_offset(group, "T", 0) < 0
    [line] = [r for r in caplog.records if r.name == "broker"]
    assert line.levelno == logging.WARNING and line.exc_info is None


@pytest.mark.parametrize("group", BAD_GROUPS, ids=BAD_GROUP_IDS)
def test_pull_and_send_back_refuse_an_illegal_group(core, client, group):
    create_topic(client, "T")
    sent = client.send("T")
    assert client.pull(group, "T").code == RC.SUBSCRIPTION_GROUP_NOT_EXIST
    offset = int(sent.ext_fields["msgId"][-16:], 16)
    assert client.send_back(offset, group).code == RC.SUBSCRIPTION_GROUP_NOT_EXIST
    assert group not in core.groups.table
    assert not [t for t in core.topics.table if t.startswith(("%RETRY%", "%DLQ%"))]


def test_legal_group_names_are_served_as_before(core, client):
    create_topic(client, "T")
    for group in ("billing", "CID_RMQ_SYS_x", "a|b%c-d_e", "g" * 120):
        assert client.heartbeat(group, ("T",)).code == RC.SUCCESS
        assert core.topics.get("%RETRY%" + group) is not None
        body = _lock_body(group)
        assert client.call(RQ.LOCK_BATCH_MQ, None, body).code == RC.SUCCESS
        assert client.call(RQ.UNLOCK_BATCH_MQ, None, body).code == RC.SUCCESS


MALFORMED = {
    "lock-without-group": (RQ.LOCK_BATCH_MQ, json.dumps({"clientId": "c", "mqSet": []}).encode()),
    "unlock-without-group": (RQ.UNLOCK_BATCH_MQ, json.dumps({"clientId": "c", "mqSet": []}).encode()),
    "lock-without-client": (RQ.LOCK_BATCH_MQ, json.dumps({"consumerGroup": "g", "mqSet": []}).encode()),
    "lock-not-json": (RQ.LOCK_BATCH_MQ, b"{not json"),
    "unlock-not-utf8": (RQ.UNLOCK_BATCH_MQ, b"\xff\xfe"),
    "lock-a-list": (RQ.LOCK_BATCH_MQ, b"[1, 2]"),
    "lock-group-an-object": (RQ.LOCK_BATCH_MQ, json.dumps({"consumerGroup": {"g": 1}, "clientId": "c"}).encode()),
    "lock-mqset-not-a-list": (RQ.LOCK_BATCH_MQ,
                              json.dumps({"consumerGroup": "g", "clientId": "c", "mqSet": 7}).encode()),
    "lock-mq-without-topic": (RQ.LOCK_BATCH_MQ,
                              json.dumps({"consumerGroup": "g", "clientId": "c", "mqSet": [{"queueId": 1}]}).encode()),
    "lock-mq-queue-a-word": (RQ.LOCK_BATCH_MQ, json.dumps(
        {"consumerGroup": "g", "clientId": "c", "mqSet": [{"topic": "T", "queueId": "zero"}]}).encode()),
    "lock-mq-a-string": (RQ.LOCK_BATCH_MQ,
                         json.dumps({"consumerGroup": "g", "clientId": "c", "mqSet": ["T"]}).encode()),
    "heartbeat-a-list": (RQ.HEART_BEAT, b"[1]"),
    "heartbeat-not-json": (RQ.HEART_BEAT, b"\x00\x01"),
    "heartbeat-consumers-not-a-list": (RQ.HEART_BEAT, json.dumps({"consumerDataSet": {"a": 1}}).encode()),
    "heartbeat-consumer-a-string": (RQ.HEART_BEAT, json.dumps({"consumerDataSet": ["g"]}).encode()),
    "heartbeat-subscriptions-bad": (RQ.HEART_BEAT, json.dumps(
        {"consumerDataSet": [{"groupName": "g", "subscriptionDataSet": [{"subString": "*"}]}]}).encode()),
    "heartbeat-producer-a-number": (RQ.HEART_BEAT, json.dumps({"producerDataSet": [3]}).encode()),
}


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_malformed_bodies_get_an_error_reply_and_one_warning(core, client, caplog, kind):
    code, body = MALFORMED[kind]
    with caplog.at_level(logging.INFO, logger="broker"):
        resp = client.call(code, None, body)
    assert resp.code == RC.SYSTEM_ERROR
    assert resp.remark and "Error:" not in resp.remark      # says what is wrong, not a Python exception name
    lines = [r for r in caplog.records if r.name.startswith("broker")]
    assert len(lines) == 1, [r.getMessage() for r in lines]
    assert lines[0].levelno == logging.WARNING and lines[0].exc_info is None
    assert client.heartbeat("billing").code == RC.SUCCESS    # the connection keeps being served


def test_a_malformed_oneway_unlock_is_answered_by_nothing_but_logged(core, client, caplog):
    with caplog.at_level(logging.INFO, logger="broker"):
        assert client.call(RQ.UNLOCK_BATCH_MQ, None, b"{}", oneway=True) is None
    [line] = [r for r in caplog.records if r.name == "broker"]
    assert line.levelno == logging.WARNING
