"""The SDK's PushConsumer subscribed by ``MessageSelector.by_sql`` (the 4.x client's
MessageSelector.bySql): the heartbeat carries expressionType SQL92, the broker filters,
and a start the broker refuses (enablePropertyFilter off, an expression that does not
compile) fails with the broker's code and remark — in process, and over TCP against
`serve` together with raw CHECK_CLIENT_CONFIG / PULL_MESSAGE frames."""
import json

import pytest

from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode, ResponseCode as RC
from rocketmq_emulator.client_sdk import (CONSUME_SUCCESS, Message, MessageSelector, MQBrokerError, MQClientError,
                                          Producer, PushConsumer)
from rocketmq_emulator.store.records import iter_records
from tests.support.processes import EmulatorProcess, wait_for
from tests.support.remoting import RawClient

ORDERS = [("eu", "150"), ("us", "500"), ("eu", "50"), ("eu", None), ("eu", "101")]
SQL = "region = 'eu' AND amount > 100"


def _send_orders(producer, topic="Orders"):
    for i, (region, amount) in enumerate(ORDERS):
        props = {"region": region} | ({"amount": amount} if amount is not None else {})
        producer.send(Message(topic, f"order-{i}", tags="TagA", properties=props))


@pytest.mark.rocketmq_broker(enablePropertyFilter=True)
def test_a_sql_selector_consumes_only_the_matching_messages(rocketmq_broker, rocketmq_producer, rocketmq_consumer):
    rocketmq_broker.create_topic("Orders", 2)
    beats = []
    rocketmq_broker.hub.observe(lambda t, cmd: beats.append(cmd) if cmd.code == RequestCode.HEART_BEAT else None)
    got = []
    rocketmq_consumer("eu-big", "Orders", MessageSelector.by_sql(SQL),
                      listener=lambda msgs, ctx: got.extend(m.text for m in msgs) or CONSUME_SUCCESS)
    _send_orders(rocketmq_producer())
    rocketmq_broker.advance(5_000)
    assert sorted(got) == ["order-0", "order-4"]
    [cd] = json.loads(beats[0].body)["consumerDataSet"]
    [orders] = [s for s in cd["subscriptionDataSet"] if s["topic"] == "Orders"]
    assert (orders["subString"], orders["expressionType"], orders["tagsSet"]) == (SQL, "SQL92", [])


def test_with_enable_property_filter_off_the_start_fails_as_a_java_consumers(rocketmq_broker):
    rocketmq_broker.create_topic("Orders", 1)
    consumer = PushConsumer("eu-big", broker=rocketmq_broker)
    consumer.subscribe("Orders", MessageSelector.by_sql(SQL))
    consumer.register_message_listener(lambda msgs, ctx: CONSUME_SUCCESS)
    with pytest.raises(MQBrokerError) as refused:
        consumer.start()
    assert refused.value.code == RC.SYSTEM_ERROR
    assert refused.value.remark == "The broker does not support consumer to filter message by SQL92"


@pytest.mark.rocketmq_broker(enablePropertyFilter=True)
def test_sql_that_does_not_compile_fails_the_start_with_one_line(rocketmq_broker):
    rocketmq_broker.create_topic("Orders", 1)
    consumer = PushConsumer("eu-big", broker=rocketmq_broker)
    consumer.subscribe("Orders", MessageSelector.by_sql("amount > 'a lot'"))
    consumer.register_message_listener(lambda msgs, ctx: CONSUME_SUCCESS)
    with pytest.raises(MQBrokerError) as refused:
        consumer.start()
    assert refused.value.code == RC.SUBSCRIPTION_PARSE_FAILED
    assert refused.value.remark == "Invalid MessageSelector. 'a lot' cannot be compared by <, >, <=, >= or BETWEEN"


def test_an_empty_sql_selector_is_refused_by_the_client_as_filter_api_does(rocketmq_broker):
    consumer = PushConsumer("g", rocketmq_broker)
    with pytest.raises(MQClientError, match="Expression can't be null! SQL92"):
        consumer.subscribe("Orders", MessageSelector.by_sql("  "))
    assert consumer.subscribe("Orders", MessageSelector.by_tag("TagA")).subscriptions["Orders"].tags_set \
        == frozenset({"TagA"})


# -- over TCP, against `serve` ----------------------------------------------------------------
@pytest.fixture(scope="module")
def sql_server(tmp_path_factory):
    """A virtual-clock `serve` whose broker.conf turns enablePropertyFilter on."""
    work = tmp_path_factory.mktemp("sql-serve")
    (work / "broker.conf").write_text("enablePropertyFilter=true\n")
    proc = EmulatorProcess(work / "store", "--clock", "virtual", "--config", str(work / "broker.conf")).start()
    yield proc
    proc.stop()


def test_over_tcp_the_sdk_consumes_by_sql(sql_server):
    got = []
    consumer = PushConsumer("tcp-eu-big", namesrv_addr=sql_server.address,
                            listener=lambda msgs, ctx: got.extend(m.text for m in msgs) or CONSUME_SUCCESS)
    consumer.subscribe("TcpOrders", MessageSelector.by_sql(SQL))
    producer = Producer("tcp-orders-producer", namesrv_addr=sql_server.address)
    with producer:
        producer.send(Message("TcpOrders", "before", properties={"region": "eu"}))   # creates the topic
        with consumer:
            _send_orders(producer, "TcpOrders")
            assert wait_for(lambda: len(got) >= 2, timeout=20), got
            assert sorted(got) == ["order-0", "order-4"]


def test_raw_frames_check_client_config_and_a_pull_by_sql(sql_server):
    with Producer("raw-orders-producer", namesrv_addr=sql_server.address) as producer:
        _send_orders(producer, "RawOrders")             # (the topic is made with 4 queues)
    raw = RawClient(int(sql_server.address.rsplit(":", 1)[1]))
    try:
        sub = {"topic": "RawOrders", "subString": "amount >", "expressionType": "SQL92", "subVersion": 1}
        body = json.dumps({"clientId": "raw@1", "group": "raw", "subscriptionData": sub}).encode()
        resp = raw.call(RemotingCommand.request(RequestCode.CHECK_CLIENT_CONFIG, None, body))
        assert resp.code == RC.SUBSCRIPTION_PARSE_FAILED
        assert resp.remark == "Invalid MessageSelector. expected a property, a literal or (, found the end at column 9"
        sub["subString"] = SQL
        body = json.dumps({"clientId": "raw@1", "group": "raw", "subscriptionData": sub}).encode()
        assert raw.call(RemotingCommand.request(RequestCode.CHECK_CLIENT_CONFIG, None, body)).code == RC.SUCCESS
        pull = {"consumerGroup": "raw", "topic": "RawOrders", "queueId": 0, "queueOffset": 0, "maxMsgNums": 32,
                "sysFlag": 4, "commitOffset": 0, "suspendTimeoutMillis": 0, "subVersion": 1,
                "subscription": "amount >", "expressionType": "SQL92"}
        resp = raw.call(RemotingCommand.request(RequestCode.PULL_MESSAGE, pull))
        assert resp.code == RC.SUCCESS          # unfiltered, as upstream's broker answers it
        pull["subscription"] = SQL
        bodies = []
        for queue_id in range(4):
            resp = raw.call(RemotingCommand.request(RequestCode.PULL_MESSAGE, pull | {"queueId": queue_id}))
            assert resp.code in (RC.SUCCESS, RC.PULL_RETRY_IMMEDIATELY, RC.PULL_NOT_FOUND), resp.remark
            bodies += [r.body for r in iter_records(resp.body)] if resp.code == RC.SUCCESS else []
        assert sorted(bodies) == [b"order-0", b"order-4"]
    finally:
        raw.close()
