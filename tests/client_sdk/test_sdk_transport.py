"""The in-process transport: commands sent as commands (the RemotingCommand objects the
network carries), held long-poll replies routed later, oneway requests, closing,
injected faults, the consumer-ids notification; and the runtime on a real (System) clock."""
import pytest

from rocketmq_emulator.broker.notifications import ConsumerIdsChanged

from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, EmbeddedBroker, Message, RemotingConnectError, RemotingTimeoutError
from rocketmq_emulator.delay_scheduler import SystemClock


def pull_cmd(topic, offset=0, suspend=True):
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, {
        "consumerGroup": "g", "topic": topic, "queueId": 0, "queueOffset": offset, "maxMsgNums": 32,
        "sysFlag": 6 if suspend else 4, "commitOffset": 0, "suspendTimeoutMillis": 15000, "subVersion": 0,
        "subscription": "*"})


def test_a_held_pull_is_answered_when_a_message_arrives(rocketmq_broker, rocketmq_producer):
    rocketmq_broker.create_topic("T", 1)
    t = rocketmq_broker.connect()
    answers = []
    t.request_async(pull_cmd("T"), lambda resp, err: answers.append((resp, err)))
    rocketmq_broker.run_until_idle()
    assert answers == []                                  # held by long polling
    rocketmq_producer().send(Message("T", b"hello"))
    rocketmq_broker.run_until_idle()
    [(resp, err)] = answers
    assert err is None and resp.code == ResponseCode.SUCCESS and resp.is_response
    assert set(resp.ext_fields) >= {"nextBeginOffset", "minOffset", "maxOffset", "suggestWhichBrokerId"}
    assert isinstance(resp.body, bytes) and resp.ext_fields["nextBeginOffset"] == "1"


def test_a_held_pull_times_out_after_suspend_timeout(rocketmq_broker):
    rocketmq_broker.create_topic("T", 1)
    t = rocketmq_broker.connect()
    answers = []
    t.request_async(pull_cmd("T"), lambda resp, err: answers.append(resp.code), timeout_ms=30000)
    rocketmq_broker.advance("14999ms")
    assert answers == []
    rocketmq_broker.advance("1ms")
    assert answers == [ResponseCode.PULL_NOT_FOUND]


def test_callbacks_never_run_inside_request_async(rocketmq_broker):
    rocketmq_broker.create_topic("T", 1)
    t = rocketmq_broker.connect()
    answers = []
    t.request_async(pull_cmd("T", suspend=False), lambda resp, err: answers.append(resp.code))
    assert answers == []
    rocketmq_broker.run_until_idle()
    assert answers == [ResponseCode.PULL_NOT_FOUND]


def test_closing_fails_pending_requests_and_refuses_new_ones(rocketmq_broker):
    rocketmq_broker.create_topic("T", 1)
    t = rocketmq_broker.connect()
    answers = []
    t.request_async(pull_cmd("T"), lambda resp, err: answers.append(err))
    t.close()
    rocketmq_broker.run_until_idle()
    assert isinstance(answers[0], RemotingConnectError)
    with pytest.raises(RemotingConnectError):
        t.request(RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO))


def test_injected_faults_fail_in_transit(rocketmq_broker):
    t = rocketmq_broker.connect()
    undo = rocketmq_broker.inject_fault(RequestCode.GET_BROKER_CLUSTER_INFO, times=2)
    for _ in range(2):
        with pytest.raises(RemotingTimeoutError, match="injected"):
            t.request(RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO))
    assert t.request(RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO)).code == ResponseCode.SUCCESS
    undo()


def test_notify_consumer_ids_changed_reaches_the_other_consumers(rocketmq_broker, rocketmq_consumer):
    """In process the other consumer's connection gets the core's ConsumerIdsChanged as
    it is (issue 37: no command built); over the codec, NOTIFY_CONSUMER_IDS_CHANGED."""
    rocketmq_broker.create_topic("T", 2)
    seen = []
    a = rocketmq_consumer("g", "T", listener=lambda m, c: CONSUME_SUCCESS)
    a.instance.transport.on_request(seen.append)
    rocketmq_consumer("g", "T", listener=lambda m, c: CONSUME_SUCCESS)
    assert seen == [ConsumerIdsChanged(a.instance.transport.channel, "g")]


def test_over_the_codec_the_notification_is_a_oneway_command():
    with EmbeddedBroker(transport="loopback") as broker:
        broker.create_topic("T", 2)
        seen = []
        a = broker.push_consumer("g", "T", listener=lambda m, c: CONSUME_SUCCESS)
        a.instance.transport.on_request(lambda cmd: seen.append((cmd.code, cmd.ext_fields, cmd.is_oneway)))
        broker.push_consumer("g", "T", listener=lambda m, c: CONSUME_SUCCESS)
        assert seen == [(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": "g"}, True)]


def test_the_runtime_runs_on_the_system_clock_too():
    with EmbeddedBroker(clock=SystemClock()) as broker:
        broker.create_topic("T", 1)
        got = []
        broker.push_consumer("g", "T", listener=lambda msgs, ctx: got.extend(msgs) or CONSUME_SUCCESS)
        broker.producer().send(Message("T", b"real time"))
        assert broker.run_until(lambda: got, timeout="5s")
        assert got[0].text == "real time"
        with pytest.raises(Exception, match="real clock"):
            broker.core.advance_clock(1000)
