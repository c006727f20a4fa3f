"""Seed 004, orderly: one failing message blocks its queue (and only its queue) with
SUSPEND_CURRENT_QUEUE_A_MOMENT every 1000 ms, unlimited by default (checklist 79); a
finite maxReconsumeTimes dead-letters it and the queue moves on (checklist 80); queue
locks give each queue one consumer."""
import pytest

from rocketmq_emulator.client_sdk import ConsumeOrderlyStatus, ListenerResultError, Message, MessageListenerOrderly

by_key = lambda queues, msg, key: queues[key % len(queues)]   # MessageQueueSelector by order id


def send_orders(producer, topic, per_queue):
    """per_queue: {queue index: [bodies]} sent in order through a selector."""
    for q, bodies in per_queue.items():
        for body in bodies:
            producer.send(Message(topic, body), selector=by_key, arg=q)


def test_a_failing_message_blocks_its_queue_while_other_queues_flow(rocketmq_broker, rocketmq_producer,
                                                                    rocketmq_consumer, time_travel):
    rocketmq_broker.create_topic("Trades", 2, order=True)
    send_orders(rocketmq_producer(), "Trades", {0: ["a1", "a2", "a3"], 1: ["b1", "b2", "b3"]})
    t0 = rocketmq_broker.now_ms
    log = []

    def listener(msgs, context):
        m = msgs[0]
        log.append((rocketmq_broker.now_ms - t0, m.text, m.reconsume_times))
        if m.text == "a2" and m.reconsume_times < 3:
            return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return ConsumeOrderlyStatus.SUCCESS

    consumer = rocketmq_consumer("matcher", "Trades", listener=listener, orderly=True)
    assert [e for e in log if e[1].startswith("b")] == [(0, "b1", 0), (0, "b2", 0), (0, "b3", 0)]
    assert [e for e in log if e[1].startswith("a")] == [(0, "a1", 0), (0, "a2", 0)]   # a3 waits
    time_travel("2s")
    assert [e for e in log if e[1].startswith("a")][-2:] == [(1000, "a2", 1), (2000, "a2", 2)]
    assert "a3" not in [e[1] for e in log]
    time_travel("5s")   # offsets persist at 10 s; meanwhile check the in-memory offset
    q0 = consumer.assigned_queues("Trades")[0]
    a_log = [e for e in log if e[1].startswith("a")]
    assert a_log == [(0, "a1", 0), (0, "a2", 0), (1000, "a2", 1), (2000, "a2", 2), (3000, "a2", 3),
                     (3000, "a3", 0)]
    assert consumer.offset_store.table[q0] == 3
    time_travel("5s")
    assert rocketmq_broker.committed_offsets("matcher", "Trades") == {0: 3, 1: 3}
    assert not rocketmq_broker.retry_messages("matcher") and not rocketmq_broker.dlq_messages("matcher")


def test_while_suspended_the_committed_offset_stays_at_the_failing_message(
        rocketmq_broker, rocketmq_producer, rocketmq_consumer, time_travel):  # checklist 79
    rocketmq_broker.create_topic("Trades", 1, order=True)
    send_orders(rocketmq_producer(), "Trades", {0: ["a1", "a2", "a3"]})
    calls = []

    def listener(msgs, context):
        calls.append(msgs[0].text)
        return ConsumeOrderlyStatus.SUCCESS if msgs[0].text != "a2" else \
            ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT

    rocketmq_consumer("matcher", "Trades", listener=listener, orderly=True)
    time_travel("1h")
    assert calls.count("a2") == 3601 and "a3" not in calls             # unlimited, every 1000 ms
    assert rocketmq_broker.committed_offset("matcher", "Trades", 0) == 1
    assert not rocketmq_broker.dlq_messages("matcher")


@pytest.mark.parametrize("asked, used", [(5, 10), (250, 250), (60_000, 30_000)])
def test_suspend_time_comes_from_the_context_clamped_to_10_30000(rocketmq_broker, rocketmq_producer,
                                                                 rocketmq_consumer, time_travel, asked, used):
    rocketmq_broker.create_topic("Trades", 1, order=True)
    rocketmq_producer().send(Message("Trades", b"x"))
    times = []

    def listener(msgs, context):
        times.append(rocketmq_broker.now_ms)
        context.suspend_current_queue_time_millis = asked
        return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT if len(times) < 3 else ConsumeOrderlyStatus.SUCCESS

    rocketmq_consumer("g", "Trades", listener=listener, orderly=True)
    time_travel("2m")
    assert [b - a for a, b in zip(times, times[1:])] == [used, used]


def test_past_a_finite_max_the_message_goes_to_the_dlq_and_the_queue_moves_on(
        rocketmq_broker, rocketmq_producer, rocketmq_consumer, time_travel):  # checklist 80
    rocketmq_broker.create_topic("Trades", 1, order=True)
    sent = {}
    producer = rocketmq_producer()
    for body in ("a1", "a2", "a3"):
        sent[body] = producer.send(Message("Trades", body), selector=by_key, arg=0)
    log = []

    def listener(msgs, context):
        log.append((msgs[0].text, msgs[0].reconsume_times))
        return (ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT if msgs[0].text == "a2"
                else ConsumeOrderlyStatus.SUCCESS)

    consumer = rocketmq_consumer("matcher", "Trades", listener=listener, orderly=True, max_reconsume_times=2)
    time_travel("3s")
    assert log == [("a1", 0), ("a2", 0), ("a2", 1), ("a2", 2), ("a3", 0)]
    [dead] = rocketmq_broker.dlq_messages("matcher")
    assert dead.text == "a2" and dead.msg_id == sent["a2"].msg_id and dead.retry_topic == "Trades"
    assert consumer.stats.dead_lettered == 1
    time_travel("10s")
    assert rocketmq_broker.committed_offset("matcher", "Trades", 0) == 3


def test_orderly_exceptions_suspend_and_class_listeners_work(rocketmq_broker, rocketmq_producer,
                                                             rocketmq_consumer, time_travel):
    rocketmq_broker.create_topic("Trades", 1, order=True)
    rocketmq_producer().send(Message("Trades", b"x"))

    class Matcher(MessageListenerOrderly):
        calls = 0

        def consume_message(self, msgs, context):
            Matcher.calls += 1
            if Matcher.calls == 1:
                raise ValueError("order book locked")
            return ConsumeOrderlyStatus.SUCCESS

    consumer = rocketmq_consumer("g", "Trades", listener=Matcher())
    assert consumer.orderly and Matcher.calls == 1
    time_travel("1s")
    assert Matcher.calls == 2 and consumer.stats.listener_exceptions == 1


def test_orderly_listener_returning_garbage_is_a_clear_error(rocketmq_broker, rocketmq_producer,
                                                              rocketmq_consumer, time_travel):
    rocketmq_broker.create_topic("Trades", 1, order=True)
    rocketmq_producer().send(Message("Trades", b"x"))
    with pytest.raises(ListenerResultError, match="returned 'SUCCESS' .*str.*SUSPEND_CURRENT_QUEUE_A_MOMENT"):
        rocketmq_consumer("g", "Trades", listener=lambda msgs, ctx: "SUCCESS", orderly=True)


def test_two_orderly_consumers_each_lock_their_own_queues(rocketmq_broker, rocketmq_producer, rocketmq_consumer,
                                                          time_travel):
    rocketmq_broker.create_topic("Trades", 4, order=True)
    seen = {"c1": [], "c2": []}

    def listener_for(name):
        def listener(msgs, context):
            seen[name] += [(context.message_queue.queue_id, m.text) for m in msgs]
            return ConsumeOrderlyStatus.SUCCESS
        return listener

    c1 = rocketmq_consumer("matcher", "Trades", listener=listener_for("c1"), orderly=True)
    c2 = rocketmq_consumer("matcher", "Trades", listener=listener_for("c2"), orderly=True)
    time_travel("1s")
    q1, q2 = set(c1.assigned_queues("Trades")), set(c2.assigned_queues("Trades"))
    assert len(q1) == len(q2) == 2 and not q1 & q2
    locks = rocketmq_broker.core.locks
    now = rocketmq_broker.now_ms
    for mq, owner in [(mq, c1) for mq in q1] + [(mq, c2) for mq in q2]:
        assert locks.holder("matcher", (mq.topic, mq.broker_name, mq.queue_id), now) == owner.client_id
    producer = rocketmq_producer()
    for i in range(40):
        producer.send(Message("Trades", f"o{i}"), selector=by_key, arg=i)
    time_travel("1s")
    for name, consumer in (("c1", c1), ("c2", c2)):
        mine = {mq.queue_id for mq in consumer.assigned_queues("Trades")}
        assert {q for q, _ in seen[name]} == mine
        for q in mine:   # in send order within each queue
            assert [t for qq, t in seen[name] if qq == q] == [f"o{i}" for i in range(40) if i % 4 == q]
    time_travel("2m")    # locks are renewed every 20 s; broker locks would expire after 60 s
    assert all(locks.holder("matcher", (mq.topic, mq.broker_name, mq.queue_id), rocketmq_broker.now_ms)
               == c1.client_id for mq in q1)


@pytest.fixture(params=["inprocess", "loopback"])
def rocketmq_transport(request):
    """Every test here runs twice: clients in process, and over the loopback transport
    (every command through the real codec)."""
    return request.param
