"""PushConsumer plumbing against the real core: heartbeat body (§2.7, checklist 37-38,
77), tag expressions and the client re-filter, pull flags (24, 33), broadcasting (73),
defaults (78), offsets, and clear errors for misuse."""
import json
import logging

import pytest

from rocketmq_emulator.broker.fronts.remoting.protocol import RequestCode
from rocketmq_emulator.client_sdk import (CONSUME_SUCCESS, RECONSUME_LATER, ConsumeConcurrentlyStatus, ConsumeFromWhere,
                        ListenerResultError, Message, MessageListenerConcurrently, MessageModel, MQClientError,
                        PushConsumer)


def capture(broker, code):
    seen = []
    broker.hub.observe(lambda t, cmd: seen.append(cmd) if cmd.code == code else None)
    return seen


def ok(msgs, context):
    return ConsumeConcurrentlyStatus.CONSUME_SUCCESS


def test_heartbeat_body_and_automatic_retry_subscription(rocketmq_broker, rocketmq_consumer):  # §2.7, 77
    rocketmq_broker.create_topic("Orders", 4)
    beats = capture(rocketmq_broker, RequestCode.HEART_BEAT)
    c = rocketmq_consumer("billing", "Orders", "TagA || TagB", listener=ok)
    data = json.loads(beats[0].body)
    assert data["clientID"] == c.client_id and c.client_id.startswith("127.0.0.1@")
    assert data["producerDataSet"] == [{"groupName": "CLIENT_INNER_PRODUCER"}]
    [cd] = data["consumerDataSet"]
    assert (cd["groupName"], cd["consumeType"], cd["messageModel"], cd["consumeFromWhere"], cd["unitMode"]) == \
        ("billing", "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET", False)
    subs = {s["topic"]: s for s in cd["subscriptionDataSet"]}
    assert set(subs) == {"Orders", "%RETRY%billing"}
    assert subs["%RETRY%billing"]["subString"] == "*" and subs["%RETRY%billing"]["tagsSet"] == []
    orders = subs["Orders"]
    assert orders["subString"] == "TagA || TagB" and orders["tagsSet"] == ["TagA", "TagB"]
    assert orders["codeSet"] == [2598919, 2598920] and orders["expressionType"] == "TAG"
    assert orders["classFilterMode"] is False and orders["subVersion"] == rocketmq_broker.now_ms
    # the broker created the retry topic with retryQueueNums (1) queues, perm 6 (checklist 37)
    retry = rocketmq_broker.core.topics.get("%RETRY%billing")
    assert (retry.read_queue_nums, retry.perm) == (1, 6)


def test_tag_expressions_and_the_client_side_refilter(rocketmq_broker, rocketmq_producer, rocketmq_consumer):
    rocketmq_broker.create_topic("Orders", 1)
    producer = rocketmq_producer()
    for tags in ("TagA", "TagB", "TagC", None, "Aa", "BB"):
        producer.send(Message("Orders", f"{tags}", tags=tags))
    got = {}
    for group, expr in (("ab", "TagA || TagB"), ("all", "*"), ("aa", "Aa")):
        got[group] = []
        rocketmq_consumer(group, "Orders", expr,
                          listener=lambda msgs, ctx, g=group: got[g].extend(m.text for m in msgs) or CONSUME_SUCCESS)
    assert got["ab"] == ["TagA", "TagB"]
    assert got["all"] == ["TagA", "TagB", "TagC", "None", "Aa", "BB"]
    # "Aa" and "BB" share a Java hash code (2112): the broker lets BB through, the client drops it
    assert got["aa"] == ["Aa"]


def test_pull_flags_suspend_then_commit_offset(rocketmq_broker, rocketmq_producer, rocketmq_consumer,
                                              time_travel):  # checklist 24, 33
    rocketmq_broker.create_topic("Orders", 1)
    pulls = capture(rocketmq_broker, RequestCode.PULL_MESSAGE)
    rocketmq_producer().send(Message("Orders", b"x"))
    rocketmq_consumer("g", "Orders", listener=ok)
    orders = [p.ext_fields for p in pulls if p.ext_fields["topic"] == "Orders"]
    assert orders[0]["sysFlag"] == "2" and orders[0]["suspendTimeoutMillis"] == "15000"
    assert orders[0]["maxMsgNums"] == "32" and orders[0]["queueOffset"] == "0"
    time_travel("15s")                                  # the held pull times out; the next one commits
    later = [p.ext_fields for p in pulls if p.ext_fields["topic"] == "Orders"][-1]
    assert later["sysFlag"] == "3" and later["commitOffset"] == "1" and later["queueOffset"] == "1"
    assert rocketmq_broker.committed_offset("g", "Orders", 0) == 1


def test_offsets_are_persisted_every_5_seconds_oneway(rocketmq_broker, rocketmq_producer, rocketmq_consumer,
                                                     time_travel):  # checklist 35
    rocketmq_broker.create_topic("Orders", 2)
    updates = capture(rocketmq_broker, RequestCode.UPDATE_CONSUMER_OFFSET)
    producer = rocketmq_producer()
    for i in range(4):
        producer.send(Message("Orders", b"x"))
    rocketmq_consumer("g", "Orders", listener=ok)
    time_travel("9s")
    assert updates == []                                # first persist after 10 s, as Java does
    time_travel("1s")
    assert all(u.is_oneway for u in updates)
    assert rocketmq_broker.committed_offsets("g", "Orders") == {0: 2, 1: 2}
    time_travel("5s")
    assert len(updates) >= 6


def test_broadcasting_delivers_to_every_consumer_and_drops_failures(rocketmq_broker, rocketmq_producer,
                                                                    rocketmq_consumer, time_travel):  # 73, 77
    rocketmq_broker.create_topic("Prices", 2)
    beats = capture(rocketmq_broker, RequestCode.HEART_BEAT)
    seen = {1: [], 2: []}

    def listener_for(n):
        def listener(msgs, context):
            seen[n].extend(m.text for m in msgs)
            return RECONSUME_LATER if n == 1 else CONSUME_SUCCESS
        return listener

    c1 = rocketmq_consumer("cache", "Prices", listener=listener_for(1), message_model=MessageModel.BROADCASTING)
    c2 = rocketmq_consumer("cache", "Prices", listener=listener_for(2), message_model="BROADCASTING")
    producer = rocketmq_producer()
    for i in range(6):
        producer.send(Message("Prices", f"p{i}"))
    time_travel("1m")
    assert sorted(seen[1]) == sorted(seen[2]) == [f"p{i}" for i in range(6)]   # each got everything, once
    assert c1.stats.dropped == 6 and c1.stats.send_back_ok == 0
    assert not rocketmq_broker.core.topics.get("%RETRY%cache") or not rocketmq_broker.retry_messages("cache")
    topics = {s["topic"] for s in json.loads(beats[0].body)["consumerDataSet"][0]["subscriptionDataSet"]}
    assert topics == {"Prices"}                          # no %RETRY% subscription
    assert rocketmq_broker.committed_offsets("cache", "Prices") == {}        # offsets stay on the client
    assert sorted(c1.offset_store.table.values()) == [3, 3]                  # and still advance


def test_a_new_group_starts_from_the_first_resident_message(rocketmq_broker, rocketmq_producer,
                                                            rocketmq_consumer):
    # RocketMQ 4.x: QUERY_CONSUMER_OFFSET answers 0 while offset 0 is still resident,
    # so CONSUME_FROM_LAST_OFFSET only matters once a queue has been trimmed (§2.6).
    rocketmq_broker.create_topic("Orders", 1)
    rocketmq_producer().send(Message("Orders", b"old"))
    got = []
    rocketmq_consumer("late", "Orders", listener=lambda msgs, ctx: got.extend(msgs) or CONSUME_SUCCESS,
                      consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET)
    assert [m.text for m in got] == ["old"]


def test_consumer_defaults(rocketmq_broker):  # checklist 78
    c = PushConsumer("g", rocketmq_broker)
    assert (c.consume_message_batch_max_size, c.pull_batch_size, c.max_reconsume_times, c.consume_timeout,
            c.suspend_current_queue_time_millis) == (1, 32, -1, 15, 1000)
    assert c.max_reconsume_times_concurrently == 16 and c.max_reconsume_times_orderly == 2 ** 31 - 1
    assert c.message_model is MessageModel.CLUSTERING
    assert c.consume_from_where is ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET


def test_listener_returning_garbage_is_a_clear_error_and_still_retried(rocketmq_broker, rocketmq_producer,
                                                                       rocketmq_consumer, time_travel):
    rocketmq_broker.create_topic("Orders", 1)
    rocketmq_producer().send(Message("Orders", b"x"))
    calls = []

    def listener(msgs, context):
        calls.append(msgs[0].reconsume_times)
        return "OK" if len(calls) == 1 else CONSUME_SUCCESS

    with pytest.raises(ListenerResultError, match=r"returned 'OK' \(str\); expected ConsumeConcurrentlyStatus"):
        rocketmq_consumer("g", "Orders", listener=listener)
    time_travel("10s")
    assert calls == [0, 1]                              # treated as RECONSUME_LATER, as RocketMQ does


def test_listener_forgetting_to_return_is_named(rocketmq_broker, rocketmq_producer, rocketmq_consumer):
    rocketmq_broker.create_topic("Orders", 1)
    rocketmq_producer().send(Message("Orders", b"x"))
    with pytest.raises(ListenerResultError, match="forget `return"):
        rocketmq_consumer("g", "Orders", listener=lambda msgs, ctx: None)


def test_non_strict_consumers_log_garbage_and_retry(rocketmq_broker, rocketmq_producer, rocketmq_consumer,
                                                    time_travel, caplog):
    rocketmq_broker.create_topic("Orders", 1)
    rocketmq_producer().send(Message("Orders", b"x"))
    calls = []
    with caplog.at_level(logging.ERROR, "client_sdk"):
        c = rocketmq_consumer("g", "Orders", strict=False,
                              listener=lambda msgs, ctx: calls.append(1) or (42 if len(calls) == 1 else CONSUME_SUCCESS))
    assert "returned 42 (int)" in caplog.text and c.stats.bad_listener_results == 1
    time_travel("10s")
    assert len(calls) == 2


def test_class_based_listener(rocketmq_broker, rocketmq_producer, rocketmq_consumer):
    rocketmq_broker.create_topic("Orders", 1)
    rocketmq_producer().send(Message("Orders", b"x"))

    class Billing(MessageListenerConcurrently):
        seen = []

        def consume_message(self, msgs, context):
            Billing.seen += msgs
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    c = rocketmq_consumer("g", "Orders", listener=Billing())
    assert not c.orderly and [m.text for m in Billing.seen] == ["x"]


def test_consumer_misuse_gives_clear_errors(rocketmq_broker):
    with pytest.raises(MQClientError, match="DEFAULT_CONSUMER"):
        PushConsumer("DEFAULT_CONSUMER", rocketmq_broker)
    with pytest.raises(MQClientError, match="consume_message_batch_max_size out of range"):
        PushConsumer("g", rocketmq_broker, consume_message_batch_max_size=0)
    with pytest.raises(MQClientError, match="message_model must be one of"):
        PushConsumer("g", rocketmq_broker, message_model="SOMETIMES")
    c = PushConsumer("g", rocketmq_broker)
    with pytest.raises(MQClientError, match="messageListener is null"):
        c.subscribe("Orders").start()
    with pytest.raises(MQClientError, match="must be callable"):
        c.register_message_listener("not a listener")
    with pytest.raises(MQClientError, match="illegal characters"):
        c.subscribe("bad topic")
    with pytest.raises(MQClientError, match="names no tag"):
        c.subscribe("Orders", "||")
    c2 = PushConsumer("g2", rocketmq_broker, listener=ok)
    with pytest.raises(MQClientError, match="no subscription"):
        c2.start()


def test_shutdown_unregisters_and_a_second_start_is_refused(rocketmq_broker, rocketmq_consumer):
    rocketmq_broker.create_topic("Orders", 1)
    c = rocketmq_consumer("g", "Orders", listener=ok)
    assert rocketmq_broker.core.consumers.get("g") is not None
    c.shutdown()
    assert rocketmq_broker.core.consumers.get("g") is None
    with pytest.raises(MQClientError, match="starts once"):
        c.start()


def test_a_topic_created_after_the_consumer_started_is_picked_up(rocketmq_broker, rocketmq_producer,
                                                                 rocketmq_consumer, time_travel):
    got = []
    rocketmq_consumer("g", "Later", listener=lambda msgs, ctx: got.extend(msgs) or CONSUME_SUCCESS)
    rocketmq_producer().send(Message("Later", b"hello"))       # auto-created from TBW102
    time_travel("20s")                                         # next rebalance finds the route
    assert [m.text for m in got] == ["hello"]


def test_only_the_own_retry_topic_is_mapped_back(rocketmq_broker, rocketmq_producer, rocketmq_consumer,
                                                 time_travel):  # checklist 76
    rocketmq_broker.create_topic("Orders", 1)
    rocketmq_producer().send(Message("Orders", b"x"))
    rocketmq_consumer("billing", "Orders", listener=lambda msgs, ctx: RECONSUME_LATER)
    time_travel("10s")                                   # a copy now sits in %RETRY%billing
    spied = []
    rocketmq_consumer("auditor", "%RETRY%billing", listener=lambda msgs, ctx: spied.extend(msgs) or CONSUME_SUCCESS)
    assert spied and spied[0].topic == "%RETRY%billing" and spied[0].retry_topic == "Orders"


def test_an_illegal_offset_is_corrected_and_consumption_goes_on(rocketmq_broker, rocketmq_producer,
                                                                rocketmq_consumer, time_travel):
    rocketmq_broker.create_topic("Orders", 1)
    producer = rocketmq_producer()
    for i in range(3):
        producer.send(Message("Orders", f"old{i}"))
    rocketmq_broker.core.store.commit_offset("g", "Orders", 0, 100)   # beyond the queue's end
    got = []
    rocketmq_consumer("g", "Orders", listener=lambda msgs, ctx: got.extend(m.text for m in msgs) or CONSUME_SUCCESS)
    assert got == []                                      # PULL_OFFSET_MOVED: queue dropped for 10 s
    time_travel("30s")
    assert rocketmq_broker.committed_offset("g", "Orders", 0) == 3     # corrected to the max offset
    producer.send(Message("Orders", b"new"))
    time_travel("1s")
    assert got == ["new"]


def test_unsubscribe_drops_the_topics_queues(rocketmq_broker, rocketmq_consumer):
    rocketmq_broker.create_topic("A", 2)
    rocketmq_broker.create_topic("B", 2)
    c = rocketmq_consumer("g", subscriptions={"A": "*", "B": "TagX"}, listener=ok)
    assert len(c.assigned_queues("A")) == 2 and len(c.assigned_queues("B")) == 2
    c.unsubscribe("B")
    rocketmq_broker.run_until_idle()
    assert c.assigned_queues("B") == [] and len(c.assigned_queues("A")) == 2
    subs = rocketmq_broker.core.consumers.get("g").subscriptions
    assert "B" not in subs and "A" in subs


@pytest.fixture(params=["inprocess", "loopback"])
def rocketmq_transport(request):
    """Every test here runs twice: clients in process, and over the loopback transport
    (every command through the real codec)."""
    return request.param
