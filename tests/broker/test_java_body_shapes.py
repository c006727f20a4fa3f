"""Every 4.x body and header the broker parses takes at least what the Java broker's
fastjson takes: enums as names or ordinals, numbers as numbers or digit strings, null
where a field is nullable (Java's default for a primitive), unknown fields ignored.
Each body is sent twice: in the Java client's shape and in the ordinal / string shape
client libraries outside Java write (the C++ core's heartbeat has enums as numbers)."""
from __future__ import annotations

import json
import logging

import pytest

from rocketmq_emulator.broker.fronts.remoting.protocol import RequestCode as RQ, ResponseCode as RC
from rocketmq_emulator.broker.fronts.remoting.protocol.json_header import decode_json_header

from .test_admin_input import create_topic
from tests.support.remoting import front_of


def _heartbeat(consumer: dict, **extra) -> bytes:
    body = {"clientID": "127.0.0.1@shape", "producerDataSet": [{"groupName": "PG"}],
            "consumerDataSet": [consumer], **extra}
    return json.dumps(body).encode()


def _consumer(group="billing", **fields) -> dict:
    d = {"groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
         "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "unitMode": False,
         "subscriptionDataSet": [{"classFilterMode": False, "topic": "T", "subString": "TagA || TagB",
                                  "tagsSet": ["TagA", "TagB"], "codeSet": [2598919, 2598920],
                                  "subVersion": 1704067200000, "expressionType": "TAG"}]}
    d.update(fields)
    return d


# The Java client's names, and the same consumer as ordinals (ConsumeType, MessageModel,
# ConsumeFromWhere in declaration order) with its long and boolean fields as strings.
JAVA_SHAPE = _consumer()
ORDINAL_SHAPE = _consumer(consumeType=1, messageModel=1, consumeFromWhere=4, unitMode="false",
                          subscriptionDataSet=[{"classFilterMode": 0, "topic": "T", "subString": "TagA || TagB",
                                                "subVersion": "1704067200000", "expressionType": "TAG"}])


@pytest.mark.parametrize("consumer", [JAVA_SHAPE, ORDINAL_SHAPE], ids=["java-names", "ordinals"])
def test_a_heartbeat_registers_the_same_consumer_in_either_shape(core, client, consumer):
    create_topic(client, "T")
    resp = client.call(RQ.HEART_BEAT, None, _heartbeat(consumer))
    assert resp.code == RC.SUCCESS, resp.remark
    info = core.consumers.get("billing")
    assert (info.consume_type, info.message_model, info.consume_from_where) == (
        "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_FIRST_OFFSET")
    sub = info.subscriptions["T"]
    assert (sub.sub_version, sub.tags_set) == (1704067200000, frozenset({"TagA", "TagB"}))
    connections = client.call(RQ.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "billing"})
    assert json.loads(connections.body)["consumeType"] == "CONSUME_PASSIVELY"


@pytest.mark.parametrize("ordinal, name", [(0, "CONSUME_ACTIVELY"), (1, "CONSUME_PASSIVELY"), (2, "CONSUME_POP")])
def test_every_consume_type_ordinal_is_its_name(core, client, ordinal, name):
    assert client.call(RQ.HEART_BEAT, None, _heartbeat(_consumer(consumeType=ordinal))).code == RC.SUCCESS
    assert core.consumers.get("billing").consume_type == name


@pytest.mark.parametrize("ordinal, name", [(0, "CONSUME_FROM_LAST_OFFSET"),
                                           (1, "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST"),
                                           (2, "CONSUME_FROM_MIN_OFFSET"), (3, "CONSUME_FROM_MAX_OFFSET"),
                                           (4, "CONSUME_FROM_FIRST_OFFSET"), (5, "CONSUME_FROM_TIMESTAMP")])
def test_every_consume_from_where_ordinal_is_its_name(core, client, ordinal, name):
    assert client.call(RQ.HEART_BEAT, None, _heartbeat(_consumer(consumeFromWhere=ordinal))).code == RC.SUCCESS
    assert core.consumers.get("billing").consume_from_where == name


def test_a_broadcasting_ordinal_is_a_broadcasting_consumer(core, client):
    """MessageModel 0 is BROADCASTING: the broker treats it as one (a group that may
    not consume by broadcast is refused its pulls)."""
    create_topic(client, "T")
    assert client.call(RQ.HEART_BEAT, None, _heartbeat(_consumer(messageModel=0))).code == RC.SUCCESS
    assert core.consumers.get("billing").message_model == "BROADCASTING"


def test_nulls_unknown_fields_and_unknown_enum_names_are_taken_as_fastjson_takes_them(core, client):
    """null for a nullable field (Java's default follows), an enum name fastjson does not
    know (it reads null), fields this broker does not know (5.x's heartbeat fingerprint,
    a filter class source): accepted."""
    consumer = _consumer(consumeType=None, messageModel="", consumeFromWhere="CONSUME_FROM_SOMEWHERE_NEW",
                         unitMode=None, subscriptionDataSet=[{"topic": "T", "subString": None, "subVersion": None,
                                                              "expressionType": None, "filterClassSource": None,
                                                              "tagsSet": None, "codeSet": None}])
    body = _heartbeat(consumer, heartbeatFingerprint=17, isWithoutSub="false", somethingNew={"a": [1]})
    resp = client.call(RQ.HEART_BEAT, None, body)
    assert resp.code == RC.SUCCESS, resp.remark
    info = core.consumers.get("billing")
    assert (info.consume_type, info.message_model, info.consume_from_where) == (
        "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET")
    assert (info.subscriptions["T"].sub_string, info.subscriptions["T"].expression_type) == ("*", "TAG")
    assert client.call(RQ.HEART_BEAT, None, json.dumps(
        {"clientID": None, "producerDataSet": None, "consumerDataSet": None}).encode()).code == RC.SUCCESS


def test_strings_given_as_numbers_are_their_text(core, client):
    """fastjson reads a number into a String field as its text: a group named 42."""
    create_topic(client, "T")
    resp = client.call(RQ.HEART_BEAT, None, _heartbeat(_consumer(group=42), producerDataSet=[{"groupName": 7}]))
    assert resp.code == RC.SUCCESS, resp.remark
    assert core.consumers.get("42") is not None
    assert "7" in core.producers


@pytest.mark.parametrize("field, value, says", [
    ("consumeType", 3, "consumeType"), ("messageModel", 2, "messageModel"), ("consumeFromWhere", 6, "consumeFromWhere"),
    ("consumeType", -1, "consumeType"), ("messageModel", 1.5, "messageModel"), ("consumeType", [1], "consumeType"),
])
def test_what_fastjson_refuses_is_refused_with_the_field_named(core, client, caplog, field, value, says):
    with caplog.at_level(logging.INFO, logger="broker"):
        resp = client.call(RQ.HEART_BEAT, None, _heartbeat(_consumer(**{field: value})))
    assert resp.code == RC.SYSTEM_ERROR
    assert says in resp.remark and "Error:" not in resp.remark
    assert core.consumers.get("billing") is None
    [line] = [r for r in caplog.records if r.name == "broker"]
    assert line.levelno == logging.WARNING and line.exc_info is None


def test_a_subscription_version_that_is_not_a_number_is_refused(core, client):
    sub = dict(JAVA_SHAPE["subscriptionDataSet"][0], subVersion="yesterday")
    resp = client.call(RQ.HEART_BEAT, None, _heartbeat(_consumer(subscriptionDataSet=[sub])))
    assert resp.code == RC.SYSTEM_ERROR and "subVersion" in resp.remark


# -- lock / unlock batch ------------------------------------------------------------------
def _lock(group="billing", **fields) -> bytes:
    body = {"consumerGroup": group, "clientId": "c1", "onlyThisBroker": False,
            "mqSet": [{"topic": "T", "brokerName": "broker-a", "queueId": 0},
                      {"topic": "T", "brokerName": "broker-a", "queueId": 1}]}
    body.update(fields)
    return json.dumps(body).encode()


LOCK_SHAPES = {
    "java": _lock(),
    "strings": _lock(onlyThisBroker="true", mqSet=[{"topic": "T", "brokerName": "broker-a", "queueId": "0"},
                                                   {"topic": "T", "brokerName": "broker-a", "queueId": "1"}]),
    "unknown-and-null": _lock(onlyThisBroker=None, extra=[1, 2], mqSet=[
        {"topic": "T", "brokerName": "broker-a", "queueId": 0, "hashCode": 5},
        {"topic": "T", "brokerName": "broker-a", "queueId": 1.0}]),
}


@pytest.mark.parametrize("shape", sorted(LOCK_SHAPES))
def test_lock_and_unlock_take_every_shape(core, client, shape):
    create_topic(client, "T")
    client.heartbeat("billing", ("T",))
    resp = client.call(RQ.LOCK_BATCH_MQ, None, LOCK_SHAPES[shape])
    assert resp.code == RC.SUCCESS, resp.remark
    assert sorted(m["queueId"] for m in json.loads(resp.body)["lockOKMQSet"]) == [0, 1]
    assert client.call(RQ.UNLOCK_BATCH_MQ, None, LOCK_SHAPES[shape]).code == RC.SUCCESS
    assert core.locks.holder("billing", ("T", "broker-a", 0), core.clock.now_ms()) is None


def test_a_lock_body_naming_the_group_by_a_number_locks_for_that_group(core, client):
    create_topic(client, "T")
    resp = client.call(RQ.LOCK_BATCH_MQ, None, _lock(group=5))
    assert resp.code == RC.SUCCESS, resp.remark
    assert core.locks.holder("5", ("T", "broker-a", 0), core.clock.now_ms()) == "c1"


def test_a_queue_without_an_id_is_queue_0_as_in_java(core, client):
    """MessageQueue.queueId is a primitive int: fastjson leaves it 0 when it is absent."""
    create_topic(client, "T")
    resp = client.call(RQ.LOCK_BATCH_MQ, None, _lock(mqSet=[{"topic": "T", "brokerName": "broker-a"}]))
    assert resp.code == RC.SUCCESS, resp.remark
    assert json.loads(resp.body)["lockOKMQSet"] == [{"topic": "T", "brokerName": "broker-a", "queueId": 0}]


# -- subscription group config (mqadmin updateSubGroup) ------------------------------------
GROUP_SHAPES = {
    "java": {"groupName": "audit", "consumeEnable": True, "consumeFromMinEnable": True,
             "consumeBroadcastEnable": True, "consumeMessageOrderly": True, "retryQueueNums": 1,
             "retryMaxTimes": 3, "groupRetryPolicy": {"type": "CUSTOMIZED", "exponentialRetryPolicy": None,
                                                      "customizedRetryPolicy": None},
             "brokerId": 0, "whichBrokerWhenConsumeSlowly": 1, "notifyConsumerIdsChangedEnable": True,
             "groupSysFlag": 0, "consumeTimeoutMinute": 15, "subscriptionDataSet": None, "attributes": {}},
    "strings-and-ordinals": {"groupName": "audit", "consumeEnable": "true", "consumeFromMinEnable": 1,
                             "consumeBroadcastEnable": "1", "consumeMessageOrderly": "true",
                             "retryQueueNums": "1", "retryMaxTimes": "3", "groupRetryPolicy": {"type": 1},
                             "brokerId": "0", "whichBrokerWhenConsumeSlowly": "1",
                             "notifyConsumerIdsChangedEnable": None, "groupSysFlag": "0"},
}


@pytest.mark.parametrize("shape", sorted(GROUP_SHAPES))
def test_a_subscription_group_config_is_stored_typed_in_either_shape(core, client, shape):
    resp = client.call(RQ.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, json.dumps(GROUP_SHAPES[shape]).encode())
    assert resp.code == RC.SUCCESS, resp.remark
    g = core.groups.table["audit"]
    assert (g.retry_max_times, g.retry_queue_nums, g.broker_id) == (3, 1, 0)
    assert g.consume_message_orderly is True and g.consume_enable is True
    assert g.notify_consumer_ids_changed_enable is True
    saved = json.loads(client.call(RQ.GET_ALL_SUBSCRIPTIONGROUP_CONFIG).body)["subscriptionGroupTable"]["audit"]
    assert saved["retryMaxTimes"] == 3 and saved["consumeMessageOrderly"] is True


@pytest.mark.parametrize("body, says", [
    ({"groupName": "audit", "retryMaxTimes": "many"}, "retryMaxTimes"),
    ({"groupName": "audit", "consumeEnable": "perhaps"}, "consumeEnable"),
    ({"groupName": "audit", "retryMaxTimes": [3]}, "retryMaxTimes"),
    ([1, 2], "JSON object"),
])
def test_a_group_config_fastjson_refuses_is_refused_with_the_field_named(core, client, body, says):
    resp = client.call(RQ.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, json.dumps(body).encode())
    assert resp.code == RC.SYSTEM_ERROR
    assert says in resp.remark and "Error:" not in resp.remark
    assert "audit" not in core.groups.table


# -- headers ------------------------------------------------------------------------------
def test_a_json_header_with_its_numbers_as_strings_and_an_ordinal_language_is_read():
    """RemotingCommand's code, opaque, flag and version are ints fastjson also reads from
    digit strings; language is a LanguageCode, by name or ordinal (13: NODE_JS)."""
    header = json.dumps({"code": "34", "opaque": "7", "flag": "0", "version": "409", "language": 13,
                         "serializeTypeCurrentRPC": 0, "extFields": {"topic": "T", "queueId": 3}}).encode()
    cmd = decode_json_header(header)
    assert (cmd.code, cmd.opaque, cmd.flag, cmd.version, cmd.language) == (34, 7, 0, 409, "NODE_JS")
    assert cmd.ext_fields == {"topic": "T", "queueId": "3"}


def test_a_header_refused_by_fastjson_stays_refused():
    from rocketmq_emulator.broker.fronts.remoting.protocol import ProtocolError

    with pytest.raises(ProtocolError, match="code"):
        decode_json_header(json.dumps({"code": "heartbeat"}).encode())


def test_a_send_back_with_a_max_reconsume_times_that_is_no_number_is_refused_by_name(core, client, caplog):
    create_topic(client, "T")
    offset = int(client.send("T").ext_fields["msgId"][-16:], 16)
    with caplog.at_level(logging.INFO, logger="broker"):
        resp = client.call(RQ.CONSUMER_SEND_MSG_BACK, {"offset": offset, "group": "billing", "delayLevel": 0,
                                                       "maxReconsumeTimes": "lots"})
    assert resp.code == RC.SYSTEM_ERROR and "maxReconsumeTimes" in resp.remark
    assert all(r.exc_info is None for r in caplog.records)


def _header_request(code: int, ext: dict, opaque: int) -> bytes:
    return json.dumps({"code": code, "opaque": opaque, "flag": 0, "language": "CPP", "version": 409,
                       "extFields": ext}).encode()


# Header-only requests, their extFields as the Java client writes them (strings) and as
# JSON numbers and booleans (ali-ons, the C++ core): the same answer either way.
HEADER_REQUESTS = {
    "create-topic": (RQ.UPDATE_AND_CREATE_TOPIC, {"topic": "T2", "readQueueNums": 2, "writeQueueNums": 2, "perm": 6,
                                                  "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": False}),
    "update-offset": (RQ.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "billing", "topic": "T", "queueId": 1,
                                                  "commitOffset": 1}),
    "query-offset": (RQ.QUERY_CONSUMER_OFFSET, {"consumerGroup": "billing", "topic": "T", "queueId": 1}),
    "max-offset": (RQ.GET_MAX_OFFSET, {"topic": "T", "queueId": 1}),
    "search-offset": (RQ.SEARCH_OFFSET_BY_TIMESTAMP, {"topic": "T", "queueId": 1, "timestamp": 0}),
    "consumer-list": (RQ.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "billing"}),
    "reset-offset": (RQ.INVOKE_BROKER_TO_RESET_OFFSET, {"topic": "T", "group": "billing", "timestamp": -1,
                                                        "isForce": True}),
}


@pytest.mark.parametrize("kind", sorted(HEADER_REQUESTS))
def test_header_requests_answer_the_same_to_strings_and_json_numbers(core, client, kind):
    create_topic(client, "T")
    client.send("T", queue_id=1)
    client.heartbeat("billing", ("T",))
    code, ext = HEADER_REQUESTS[kind]
    as_strings = {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in ext.items()}
    answers = []
    for i, fields in enumerate((as_strings, ext)):
        cmd = decode_json_header(_header_request(code, fields, 100 + i))
        resp = front_of(core).handle(cmd, client.channel)
        answers.append((resp.code, resp.ext_fields, resp.body))
    assert answers[0][0] == RC.SUCCESS, answers
    if kind == "create-topic":
        # the answer says the topic before and after (topic create's created/updated line):
        # the second request meets what the first made, and makes the same topic
        first, second = (json.loads(body) for _, _, body in answers)
        assert first["before"] is None and second["before"] == first["after"] == second["after"], answers
        answers = [(code, ext, None) for code, ext, _ in answers]
    assert answers[0] == answers[1]
