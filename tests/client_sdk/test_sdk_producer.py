"""Producer against the real broker core: SEND_MESSAGE_V2 short header names (checklist
17-18), SendResult ids (48), properties, delay levels, routes with the TBW102 fallback,
queue selection, and clear errors for bad input."""
import pytest

from rocketmq_emulator.broker.fronts.remoting.protocol import RequestCode, ResponseCode
from rocketmq_emulator.client_sdk import (ConsumeConcurrentlyStatus, Message, MessageQueue, MQBrokerError, MQClientError, Producer, SendStatus,
                        decode_uniq_key)


def sends(broker):
    seen = []
    broker.hub.observe(lambda t, cmd: seen.append(cmd) if cmd.code == RequestCode.SEND_MESSAGE_V2 else None)
    return seen


def test_send_returns_uniq_key_offset_msg_id_queue_and_offset(rocketmq_broker, rocketmq_producer):
    rocketmq_broker.create_topic("Orders", 4)
    producer = rocketmq_producer("order_producer")
    r1 = producer.send(Message("Orders", b"one", tags="TagA", keys=["k1", "k2"]))
    r2 = producer.send(Message("Orders", "two"))
    assert r1.status is SendStatus.SEND_OK
    assert len(r1.msg_id) == 32 and int(r2.msg_id[-4:], 16) == int(r1.msg_id[-4:], 16) + 1   # checklist 48
    assert decode_uniq_key(r1.msg_id, rocketmq_broker.now_ms)["time_ms"] == rocketmq_broker.now_ms
    assert r1.queue == MessageQueue("Orders", "broker-a", 0) and r1.queue_offset == 0
    assert r2.queue.queue_id == 1                      # round robin
    stored = rocketmq_broker.messages("Orders", 0)[0]
    assert stored.msg_id == r1.msg_id and stored.offset_msg_id == r1.offset_msg_id
    assert stored.tags == "TagA" and stored.keys == "k1 k2" and stored.body == b"one"


def test_send_message_v2_uses_short_header_names(rocketmq_broker, rocketmq_producer):  # checklist 17-18
    rocketmq_broker.create_topic("Orders", 1)
    seen = sends(rocketmq_broker)
    rocketmq_producer("pg").send(Message("Orders", b"x", tags="T", properties={"color": "red"}, flag=7))
    ext = seen[0].ext_fields
    assert {k for k in ext} >= set("abcdefghijkmn")
    assert ext["a"] == "pg" and ext["b"] == "Orders" and ext["c"] == "TBW102" and ext["d"] == "4"
    assert ext["e"] == "0" and ext["f"] == "0" and ext["h"] == "7" and ext["j"] == "0" and ext["k"] == "false"
    assert ext["g"] == str(rocketmq_broker.now_ms) and ext["n"] == "broker-a"
    props = dict(p.split("\x01") for p in ext["i"].split("\x02"))
    assert props["TAGS"] == "T" and props["WAIT"] == "true" and props["color"] == "red" and "UNIQ_KEY" in props


def test_user_properties_and_delay_level(rocketmq_broker, rocketmq_producer, rocketmq_consumer, time_travel):
    rocketmq_broker.create_topic("Orders", 1)
    got = []

    def listener(msgs, context):
        got.extend(msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    rocketmq_consumer("cg", "Orders", listener=listener)
    rocketmq_producer().send(Message("Orders", b"later", properties={"orderId": "42"}, delay_time_level=3))
    time_travel("9s")
    assert got == []
    time_travel("1s")                                   # level 3 = 10 s
    assert [m.body for m in got] == [b"later"]
    assert got[0].user_properties == {"orderId": "42"} and got[0].get_property("orderId") == "42"


def test_unknown_topic_uses_the_tbw102_route_and_is_auto_created(rocketmq_broker, rocketmq_producer):
    result = rocketmq_producer().send(Message("BrandNew", b"x"))
    assert result.status is SendStatus.SEND_OK
    assert rocketmq_broker.core.topics.get("BrandNew").write_queue_nums == 4   # defaultTopicQueueNums


@pytest.mark.rocketmq_broker(autoCreateTopicEnable=False)
def test_unknown_topic_without_auto_create_is_a_clear_error(rocketmq_producer):
    with pytest.raises(MQClientError, match="No route info of this topic: NoSuchTopic"):
        rocketmq_producer().send(Message("NoSuchTopic", b"x"))


def test_closed_and_unstarted_producers_refuse_to_send(rocketmq_broker):
    rocketmq_broker.create_topic("Orders", 1)
    producer = Producer("pg", rocketmq_broker)
    with pytest.raises(MQClientError, match="CREATE_JUST.*call start"):
        producer.send(Message("Orders", b"x"))
    producer.start()
    producer.send(Message("Orders", b"x"))
    producer.shutdown()
    with pytest.raises(MQClientError, match="SHUTDOWN_ALREADY.*shut down"):
        producer.send(Message("Orders", b"x"))
    with pytest.raises(MQClientError, match="starts once"):
        producer.start()


@pytest.mark.parametrize("msg, match", [
    (Message("Orders", b""), "body length is zero"),
    (Message("Orders", None), "bytes or str"),
    (Message("bad topic!", b"x"), "illegal characters"),
    (Message("", b"x"), "blank"),
    (Message("SCHEDULE_TOPIC_XXXX", b"x"), "forbidden"),
    (Message("Orders", b"x", properties={"DELAY": "3"}), "used by system"),
    (Message("Orders", b"x", delay_time_level=-1), "delay_time_level"),
    ("not a message", "expected client_sdk.Message"),
])
def test_bad_messages_are_refused_before_the_wire(rocketmq_broker, rocketmq_producer, msg, match):
    rocketmq_broker.create_topic("Orders", 1)
    seen = sends(rocketmq_broker)
    with pytest.raises(MQClientError, match=match):
        rocketmq_producer().send(msg)
    assert seen == []


def test_bad_group_names(rocketmq_broker):
    with pytest.raises(MQClientError, match="DEFAULT_PRODUCER"):
        Producer("DEFAULT_PRODUCER", rocketmq_broker)
    with pytest.raises(MQClientError, match="illegal characters"):
        Producer("my group", rocketmq_broker)
    with pytest.raises(MQClientError, match="needs a broker"):
        Producer("pg")


def test_read_only_broker_refuses_sends_with_the_broker_code(rocketmq_broker, rocketmq_producer):
    rocketmq_broker.create_topic("Orders", 2)
    producer = rocketmq_producer()
    producer.send(Message("Orders", b"warm the route cache"))
    rocketmq_broker.set_writeable(False)
    with pytest.raises(MQBrokerError) as err:
        producer.send(Message("Orders", b"x"))
    assert err.value.code == ResponseCode.NO_PERMISSION and err.value.code_name == "NO_PERMISSION"
    assert "sending message is forbidden" in str(err.value)
    # a fresh route now shows no writable queue at all
    with pytest.raises(MQClientError, match="No route info.*no writable queue"):
        producer.send(Message("Orders", b"x"))
    rocketmq_broker.set_writeable(True)
    assert producer.send(Message("Orders", b"x")).status is SendStatus.SEND_OK


def test_queue_selector_and_explicit_queue(rocketmq_broker, rocketmq_producer):
    rocketmq_broker.create_topic("Orders", 4)
    producer = rocketmq_producer()
    by_order = lambda queues, msg, order_id: queues[order_id % len(queues)]
    assert producer.send(Message("Orders", b"x"), selector=by_order, arg=6).queue.queue_id == 2
    assert producer.send(Message("Orders", b"x"), MessageQueue("Orders", "broker-a", 3)).queue.queue_id == 3
    with pytest.raises(MQClientError, match="not equal"):
        producer.send(Message("Orders", b"x"), MessageQueue("Other", "broker-a", 0))
    with pytest.raises(MQClientError, match="selector returned"):
        producer.send(Message("Orders", b"x"), selector=lambda q, m, a: None)


def test_big_bodies_are_compressed_and_inflated_for_consumers(rocketmq_broker, rocketmq_producer,
                                                             rocketmq_consumer):
    from rocketmq_emulator.client_sdk import CONSUME_SUCCESS

    rocketmq_broker.create_topic("Orders", 1)
    body = b"0123456789" * 1000
    rocketmq_producer().send(Message("Orders", body))
    raw = rocketmq_broker.messages("Orders")[0]
    assert raw.sys_flag & 0x1 and len(raw.body) < len(body)
    got = []
    rocketmq_consumer("cg", "Orders", listener=lambda msgs, ctx: got.extend(msgs) or CONSUME_SUCCESS)
    assert got[0].body == body


def test_producer_heartbeat_registers_its_group(rocketmq_broker, rocketmq_producer):
    p = rocketmq_producer("pg_hb")
    assert p.client_id in rocketmq_broker.core.producers["pg_hb"].values()


def test_send_batch_puts_messages_in_one_queue_in_order(rocketmq_broker, rocketmq_producer, rocketmq_consumer):
    rocketmq_broker.create_topic("Orders", 4)
    producer = rocketmq_producer()
    seen = []
    rocketmq_broker.hub.observe(lambda t, cmd: seen.append(cmd) if cmd.code != RequestCode.GET_ROUTEINFO_BY_TOPIC
                                else None)
    result = producer.send_batch([Message("Orders", f"b{i}", tags="T", keys=f"k{i}") for i in range(5)])
    [cmd] = seen
    assert cmd.code == RequestCode.SEND_BATCH_MESSAGE and cmd.ext_fields["m"] == "true"
    ids = result.msg_id.split(",")
    assert len(ids) == 5 and len(result.offset_msg_id.split(",")) == 5 and result.queue_offset == 0
    stored = rocketmq_broker.messages("Orders", result.queue.queue_id)
    assert [m.text for m in stored] == [f"b{i}" for i in range(5)] and [m.msg_id for m in stored] == ids
    assert [m.keys for m in stored] == [f"k{i}" for i in range(5)] and {m.tags for m in stored} == {"T"}
    with pytest.raises(MQClientError, match="same"):
        producer.send_batch([Message("Orders", b"x"), Message("Other", b"y")])
    with pytest.raises(MQClientError, match="TimeDelayLevel"):
        producer.send_batch([Message("Orders", b"x", delay_time_level=2)])
    with pytest.raises(MQClientError, match="at least one"):
        producer.send_batch([])


@pytest.fixture(params=["inprocess", "loopback"])
def rocketmq_transport(request):
    """Every test here runs twice: clients in process, and over the loopback transport
    (every command through the real codec)."""
    return request.param
