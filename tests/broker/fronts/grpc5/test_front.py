"""The 5.x front's answers without a network (broker/fronts/grpc5/front.py): the Settings a
client is told, the status code of every kind of bad input, the stored form of a 5.x
message. The real client against the gRPC listener is tests/interop/test_rocketmq5_client.py."""
import pytest

pytest.importorskip("rocketmq.grpc_protocol", reason="needs the grpc extra: ./dev test installs it")

from rocketmq.grpc_protocol import service_pb2 as spb  # noqa: E402

from rocketmq_emulator.broker.config import BrokerConfig  # noqa: E402
from rocketmq_emulator.broker.core import BrokerCore  # noqa: E402
from rocketmq_emulator.broker.rocketmq_model.groups import SubscriptionGroupConfig
from rocketmq_emulator.broker.fronts.grpc5.convert import duration, pb  # noqa: E402
from rocketmq_emulator.broker.fronts.grpc5.front import Rocketmq5Front  # noqa: E402
from rocketmq_emulator.delay_scheduler import VirtualClock  # noqa: E402
from rocketmq_emulator.store.records import Prop  # noqa: E402

EP = pb.Endpoints(scheme=pb.IPv4, addresses=[pb.Address(host="127.0.0.1", port=8081)])


def front(**cfg):
    """A front whose broker has topic T (8 queues): a 5.x route names only topics that exist."""
    f = Rocketmq5Front(BrokerCore.in_memory(VirtualClock(), BrokerConfig(**cfg)))
    f.core.create_topic("T", 8)
    return f


def consumer_settings(group="G", language=6):
    return pb.Settings(client_type=pb.SIMPLE_CONSUMER, subscription=pb.Subscription(group=pb.Resource(name=group)),
                       user_agent=pb.UA(language=language))


def msg(topic="T", body=b"x", message_id="01AB", **sp):
    return pb.Message(topic=pb.Resource(name=topic), body=body,
                      system_properties=pb.SystemProperties(message_id=message_id, **sp))


def test_a_producer_is_told_its_body_limit_and_an_exponential_backoff():
    f = front()
    s = f.telemetry_settings("c1", pb.Settings(client_type=pb.PRODUCER, publishing=pb.Publishing()))
    assert s.publishing.max_body_size == 4 * 1024 * 1024 and s.publishing.validate_message_type
    assert s.backoff_policy.max_attempts == 3 and s.backoff_policy.HasField("exponential_backoff")
    assert not s.metric.on


def test_every_consumer_gets_seed_002s_table_as_a_customized_backoff_as_the_proxy_sends_it():
    """The proxy's GrpcClientSettingsManager#mergeSubscriptionData answers every client
    alike - the group's retry policy, customized unless the group says exponential - and
    so does this front: the Node client (language 8) too, though it reads no customized
    policy (it then nacks with an invisible time of 0: README, 5.x guide)."""
    f = front()
    table = [10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200]
    for client_id, language in (("c1", 6), ("c2", 8), ("c3", 1)):
        s = f.telemetry_settings(client_id, consumer_settings(language=language))
        assert s.backoff_policy.max_attempts == 17
        assert s.backoff_policy.WhichOneof("strategy") == "customized_backoff", language
        assert [d.seconds for d in s.backoff_policy.customized_backoff.next] == table
        assert s.subscription.receive_batch_size == 32 and s.subscription.long_polling_timeout.seconds == 20


def test_a_fifo_group_gets_its_fixed_interval_as_a_customized_backoff_for_every_client():
    f = front()
    f.core.update_group(SubscriptionGroupConfig("F", consume_message_orderly=True))
    for client_id, language in (("c1", 6), ("c2", 8)):
        s = f.telemetry_settings(client_id, consumer_settings("F", language=language))
        assert s.subscription.fifo and s.backoff_policy.WhichOneof("strategy") == "customized_backoff"
        assert [d.seconds for d in s.backoff_policy.customized_backoff.next] == [3]


def test_settings_without_a_role_are_refused_and_heartbeats_need_settings_first():
    f = front()
    assert f.telemetry_settings("c1", pb.Settings(client_type=pb.PRODUCER)) is None
    assert f.heartbeat("c1").code == pb.UNRECOGNIZED_CLIENT_TYPE
    f.telemetry_settings("c1", consumer_settings())
    assert f.heartbeat("c1").code == pb.OK


def test_routes_and_assignments():
    f = front()
    st, queues = f.query_route("T", EP)
    assert st.code == pb.OK and [q.id for q in queues] == list(range(8)) and queues[0].broker.endpoints == EP
    st, [a] = f.query_assignment("T", "G", EP)
    assert st.code == pb.OK and a.message_queue.id == -1
    assert f.query_route("bad topic!", EP)[0].code == pb.ILLEGAL_TOPIC


@pytest.mark.parametrize("message, code", [
    (msg(body=b""), pb.MESSAGE_BODY_EMPTY),
    (msg(message_id=" "), pb.ILLEGAL_MESSAGE_ID),
    (msg(tag="a|b"), pb.ILLEGAL_MESSAGE_TAG),
    (msg(message_group="g" * 64), pb.ILLEGAL_MESSAGE_GROUP),
    (pb.Message(topic=pb.Resource(name="T"), body=b"x", user_properties={"UNIQ_KEY": "x"},
                system_properties=pb.SystemProperties(message_id="01")), pb.ILLEGAL_MESSAGE_PROPERTY_KEY),
])
def test_bad_messages_get_their_code_and_nothing_is_stored(message, code):
    f = front()
    st, _ = f.send([message])
    assert st.code == code and st.message
    assert sum(f.core.store.max_offset("T", q) for q in range(8)) == 0


def test_a_delivery_time_beyond_the_maximum_is_illegal():
    f = front(timer_max_delay_sec=60)
    now = f.core.clock.now_ms()
    late = msg(delivery_timestamp=pb.SystemProperties().born_timestamp.__class__(seconds=now // 1000 + 61))
    assert f.send([late])[0].code == pb.ILLEGAL_DELIVERY_TIME


def test_a_5x_message_is_stored_as_a_5x_proxy_stores_it():
    f = front()
    st, [entry] = f.send([pb.Message(topic=pb.Resource(name="T"), body=b"b", user_properties={"color": "red"},
                                     system_properties=pb.SystemProperties(message_id="01FF", tag="TagA",
                                                                           keys=["k1", "k2"], message_group="g1"))])
    assert st.code == pb.OK and entry.message_id == "01FF"
    [rec] = [f.core.store.look_message_by_offset(f.core.store.queue_entry("T", q, 0)[0])
             for q in range(8) if f.core.store.max_offset("T", q)]
    p = rec.properties
    assert (p[Prop.UNIQ_KEY], p[Prop.TAGS], p[Prop.KEYS], p["__SHARDINGKEY"], p["color"]) == \
        ("01FF", "TagA", "k1 k2", "g1", "red")


def test_receive_refuses_bad_sql_filters_and_out_of_range_invisible_times():
    f = front()
    req = spb.ReceiveMessageRequest(group=pb.Resource(name="G"), message_queue=pb.MessageQueue(
        topic=pb.Resource(name="T"), id=-1), filter_expression=pb.FilterExpression(type=pb.SQL, expression="a >"))
    st = f.receive(req)[0]
    assert st.code == pb.ILLEGAL_FILTER_EXPRESSION and "\n" not in st.message
    assert st.message.startswith("Invalid MessageSelector. expected a property, a literal or (")
    req.filter_expression.type, req.filter_expression.expression = pb.TAG, "*"
    req.invisible_duration.CopyFrom(duration(5_000))
    assert f.receive(req)[0].code == pb.ILLEGAL_INVISIBLE_TIME
    req.invisible_duration.CopyFrom(duration(15_000))
    assert f.receive(req) == (None, [])          # nothing yet: the adapter waits


def test_acks_and_invisible_changes_with_bad_handles():
    f = front()
    st, [entry] = f.ack("G", "T", [spb.AckMessageEntry(message_id="x", receipt_handle="nonsense")])
    assert st.code == pb.INVALID_RECEIPT_HANDLE and entry.status.code == pb.INVALID_RECEIPT_HANDLE
    assert f.change_invisible("G", "T", "t 0 0 1 1", duration(1000))[0].code == pb.INVALID_RECEIPT_HANDLE
    assert f.forward_to_dlq("G", "T", "t 0 0 1 1").code == pb.INVALID_RECEIPT_HANDLE


def test_a_push_consumers_deliveries_are_renewed_until_it_terminates_then_back_in_a_second():
    """auto_renew receives (a PushConsumer's) stay invisible while the client is there;
    NotifyClientTermination (or its Telemetry stream ending: the listener calls the same)
    makes them visible again 1 s later (reference §4.6, §4.7). A SimpleConsumer's
    explicit invisible time is not touched."""
    f = front()
    f.send([msg(body=b"push", message_id="01")])
    push = spb.ReceiveMessageRequest(group=pb.Resource(name="G"), batch_size=1, auto_renew=True,
                                     message_queue=pb.MessageQueue(topic=pb.Resource(name="T"), id=0),
                                     filter_expression=pb.FilterExpression(type=pb.TAG, expression="*"))
    st, [m] = f.receive(push, "push-client")
    assert st.code == pb.OK and m.body == b"push"
    f.send([msg(body=b"simple", message_id="02")])
    simple = spb.ReceiveMessageRequest(group=pb.Resource(name="G"), batch_size=1, invisible_duration=duration(600_000),
                                       message_queue=push.message_queue, filter_expression=push.filter_expression)
    st, [s] = f.receive(simple, "simple-client")
    assert s.body == b"simple"
    f.core.advance_clock(300_000)                     # five times the 60 s it was popped for
    assert f.receive(push, "other") == (None, [])
    assert f.notify_termination("push-client").code == pb.OK
    f.core.advance_clock(1_000)
    st, [again] = f.receive(push, "other")
    assert again.body == b"push" and again.system_properties.delivery_attempt == 2
    assert f.receive(push, "other") == (None, [])     # the simple one keeps its 10 min
    f.core.advance_clock(299_000)
    st, [later] = f.receive(push, "other")
    assert later.body == b"simple"


# -- issue 42: message types, transactions, the proxy's answers ---------------------------------------
def producer_settings(*topics):
    return pb.Settings(client_type=pb.PRODUCER, publishing=pb.Publishing(topics=[pb.Resource(name=t) for t in topics]))


def test_a_route_lists_its_topics_message_type_and_an_untyped_topic_the_three_it_always_took():
    f = front()
    for name, kind in (("TF", "fifo"), ("TD", "delay"), ("TT", "transaction"), ("TN", "normal"), ("TM", "mixed")):
        f.core.create_topic(name, 2, message_type=kind)
    types = {t: list(f.query_route(t, EP)[1][0].accept_message_types) for t in ("T", "TF", "TD", "TT", "TN", "TM")}
    assert types == {"T": [pb.NORMAL, pb.FIFO, pb.DELAY], "TF": [pb.FIFO], "TD": [pb.DELAY],
                     "TT": [pb.TRANSACTION], "TN": [pb.NORMAL],
                     "TM": [pb.NORMAL, pb.FIFO, pb.DELAY, pb.TRANSACTION]}


def test_a_message_of_another_type_is_refused_with_the_proxys_code_and_not_stored():
    f = front()
    f.core.create_topic("TN", 1, message_type="normal")
    f.core.create_topic("TF", 1, message_type="fifo")
    later = pb.SystemProperties().born_timestamp.__class__(seconds=f.core.clock.now_ms() // 1000 + 60)
    for topic, m in (("TN", msg("TN", message_group="g")), ("TN", msg("TN", delivery_timestamp=later)),
                     ("TF", msg("TF")), ("TN", msg("TN", message_type=pb.TRANSACTION))):
        st, [entry] = f.send([m])
        assert st.code == entry.status.code == pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, (topic, st)
        assert "expected type" in st.message
    assert f.core.store.max_offset("TN", 0) == f.core.store.max_offset("TF", 0) == 0
    assert f.send([msg("TF", message_group="g")])[0].code == pb.OK


def test_no_5x_route_assignment_or_send_creates_a_topic():
    f = front(auto_create_topic_enable=True)
    assert f.query_route("Nope", EP)[0].code == pb.TOPIC_NOT_FOUND
    assert f.query_assignment("Nope", "G", EP)[0].code == pb.TOPIC_NOT_FOUND
    assert f.send([msg("Nope")])[0].code == pb.TOPIC_NOT_FOUND
    assert f.core.topics.get("Nope") is None


def test_a_send_result_carries_the_message_id_as_its_transaction_id():
    f = front()
    st, [entry] = f.send([msg(message_id="01AA")])
    assert st.code == pb.OK and entry.transaction_id == entry.message_id == "01AA"


def test_a_fifo_message_is_delivered_with_its_group_in_shardingkey_too_as_the_proxy_gives_it():
    f = front()
    f.send([msg(message_id="01", message_group="order-1")])
    req = spb.ReceiveMessageRequest(group=pb.Resource(name="G"), batch_size=1, invisible_duration=duration(30_000),
                                    message_queue=pb.MessageQueue(topic=pb.Resource(name="T"), id=-1),
                                    filter_expression=pb.FilterExpression(type=pb.TAG, expression="*"))
    _, [m] = f.receive(req)
    assert m.system_properties.message_group == "order-1" and m.user_properties["__SHARDINGKEY"] == "order-1"
    assert m.system_properties.message_type == pb.FIFO


def test_a_transaction_ends_by_its_id_and_an_unknown_id_is_invalid():
    f = front()
    f.core.create_topic("TT", 1, message_type="transaction")
    st, [entry] = f.send([msg("TT", message_id="01TX", message_type=pb.TRANSACTION)])
    assert st.code == pb.OK and entry.transaction_id == "01TX"
    assert f.core.store.max_offset("TT", 0) == 0                    # a half message
    assert f.end_transaction("TT", "nope", pb.COMMIT, pb.SOURCE_CLIENT).code == pb.INVALID_TRANSACTION_ID
    assert f.end_transaction("TT", "01TX", pb.TRANSACTION_RESOLUTION_UNSPECIFIED, pb.SOURCE_CLIENT).code == pb.OK
    assert f.end_transaction("TT", "01TX", pb.COMMIT, pb.SOURCE_CLIENT).code == pb.OK
    assert f.core.store.max_offset("TT", 0) == 1
    assert f.end_transaction("TT", "01TX", pb.COMMIT, pb.SOURCE_CLIENT).code == pb.INVALID_TRANSACTION_ID
    rec = f.core.store.look_message_by_offset(f.core.store.queue_entry("TT", 0, 0)[0])
    assert "TRAN_MSG" not in rec.properties and rec.properties["__transactionId__"] == "01TX"


def test_a_check_back_goes_to_a_producer_of_the_topic_on_its_telemetry_stream():
    f = front()
    f.core.create_topic("TT", 1, message_type="transaction")
    sent = []
    f.outgoing = lambda client, command: sent.append((client, command))
    f.telemetry_settings("consumer", consumer_settings())
    f.telemetry_settings("producer", producer_settings("TT"))
    f.send([msg("TT", body=b"half", message_id="01TX", message_type=pb.TRANSACTION)])
    f.core.advance_clock(5_999)
    assert sent == []
    f.core.advance_clock(1)
    [(client, command)] = sent
    check = command.recover_orphaned_transaction_command
    assert client == "producer" and check.transaction_id == "01TX"
    assert (check.message.topic.name, check.message.body, check.message.system_properties.message_id,
            check.message.system_properties.message_type) == ("TT", b"half", "01TX", pb.TRANSACTION)
    assert f.end_transaction("TT", "01TX", pb.ROLLBACK, pb.SOURCE_SERVER_CHECK).code == pb.OK
    f.notify_termination("producer")                          # gone: the next one finds nobody to ask
    f.send([msg("TT", body=b"half 2", message_id="02TX", message_type=pb.TRANSACTION)])
    f.core.advance_clock(60_000)
    assert len(sent) == 1 and f.core.transactions.waiting()[0].checks == 1
