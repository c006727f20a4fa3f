"""Seed 004, concurrently: ackIndex, whole-batch RECONSUME_LATER, the 16-retry ladder,
send-back fallback, and the broker's write permission switched off and on — all through
the real broker core on a virtual clock, written the way a user writes tests."""
import pytest

from rocketmq_emulator.broker.fronts.remoting.protocol import RequestCode
from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, RECONSUME_LATER, ConsumeConcurrentlyStatus, Message

DELAYS_S = [10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200]  # levels 3..18


def props_of(cmd):
    return dict(p.split("\x01", 1) for p in cmd.ext_fields["i"].split("\x02"))


def test_batch_of_ten_with_the_fifth_failing_and_ack_index_3(rocketmq_broker, rocketmq_producer,
                                                             rocketmq_consumer, time_travel):
    rocketmq_broker.create_topic("Orders", 1)
    producer = rocketmq_producer()
    ids = [producer.send(Message("Orders", f"order-{i}")).msg_id for i in range(10)]
    batches = []

    def listener(msgs, context):
        batches.append([(m.text, m.reconsume_times) for m in msgs])
        for i, m in enumerate(msgs):
            if m.text == "order-4" and m.reconsume_times == 0:
                context.ack_index = i - 1      # = 3: msgs[0..3] are done, msgs[4..9] are retried
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = rocketmq_consumer("billing", "Orders", listener=listener, consume_message_batch_max_size=10)
    assert batches == [[(f"order-{i}", 0) for i in range(10)]]          # one batch of ten
    assert consumer.stats.send_back_ok == 6 and consumer.stats.consume_ok == 4
    waiting = rocketmq_broker.scheduled_messages("%RETRY%billing")
    assert [m.text for m in waiting] == [f"order-{i}" for i in range(4, 10)]
    assert {m.delay_time_level for m in waiting} == {3}                  # 3 + reconsumeTimes(0)

    time_travel("10s")
    assert rocketmq_broker.committed_offset("billing", "Orders", 0) == 10   # sent back = settled
    retried = [m for batch in batches[1:] for m in batch]
    assert sorted(retried) == [(f"order-{i}", 1) for i in range(4, 10)]     # only 4..9, once each
    assert [m.msg_id for m in rocketmq_broker.retry_messages("billing")] == ids[4:]
    time_travel("1h")
    assert len([m for b in batches for m in b]) == 16 and not rocketmq_broker.dlq_messages("billing")


def test_reconsume_later_sends_the_whole_batch_back(rocketmq_broker, rocketmq_producer, rocketmq_consumer,
                                                    time_travel):  # checklist 72
    rocketmq_broker.create_topic("Orders", 1)
    producer = rocketmq_producer()
    for i in range(10):
        producer.send(Message("Orders", f"order-{i}"))
    seen = []

    def listener(msgs, context):
        seen.append([(m.text, m.reconsume_times) for m in msgs])
        context.ack_index = 5                  # ignored with RECONSUME_LATER
        return RECONSUME_LATER if msgs[0].reconsume_times == 0 else CONSUME_SUCCESS

    consumer = rocketmq_consumer("billing", "Orders", listener=listener, consume_message_batch_max_size=10)
    assert consumer.stats.send_back_ok == 10 and consumer.stats.consume_failed == 10
    time_travel("10s")
    assert sorted(m for b in seen[1:] for m in b) == sorted((f"order-{i}", 1) for i in range(10))
    assert rocketmq_broker.committed_offset("billing", "Orders", 0) == 10


def test_batches_are_cut_at_consume_message_batch_max_size(rocketmq_broker, rocketmq_producer,
                                                          rocketmq_consumer):
    rocketmq_broker.create_topic("Orders", 1)
    producer = rocketmq_producer()
    for i in range(7):
        producer.send(Message("Orders", f"m{i}"))
    sizes = []
    rocketmq_consumer("g3", "Orders", listener=lambda msgs, ctx: sizes.append(len(msgs)) or CONSUME_SUCCESS,
                      consume_message_batch_max_size=3)
    sizes_default = []
    rocketmq_consumer("g1", "Orders", listener=lambda msgs, ctx: sizes_default.append(len(msgs)) or CONSUME_SUCCESS)
    assert sizes == [3, 3, 1] and sizes_default == [1] * 7       # default batch size 1 (checklist 78)


def test_the_whole_16_retry_ladder_ends_in_the_dlq(rocketmq_broker, rocketmq_producer, rocketmq_consumer,
                                                   time_travel):  # checklist 53, 56, 59-62, 76
    rocketmq_broker.create_topic("Orders", 2)
    sent = rocketmq_producer().send(Message("Orders", b"poison", tags="TagA", keys="order-7"))
    start = rocketmq_broker.now_ms
    deliveries = []

    def listener(msgs, context):
        for m in msgs:
            deliveries.append((rocketmq_broker.now_ms - start, m.topic, m.reconsume_times, m.msg_id))
        return RECONSUME_LATER

    rocketmq_consumer("billing", "Orders", listener=listener)
    time_travel("4h45m39s")                                        # the ladder sums to 4h45m40s
    assert len(deliveries) == 16
    time_travel("1s")
    assert len(deliveries) == 17                                   # 1 delivery + 16 retries
    expected_times = [0]
    for d in DELAYS_S:
        expected_times.append(expected_times[-1] + d * 1000)
    assert [d[0] for d in deliveries] == expected_times            # exact, on the virtual clock
    assert {d[1] for d in deliveries} == {"Orders"}                # RETRY_TOPIC restored (checklist 76)
    assert [d[2] for d in deliveries] == list(range(17))
    assert {d[3] for d in deliveries} == {sent.msg_id}             # same msgId every time
    [dead] = rocketmq_broker.dlq_messages("billing")
    assert dead.body == b"poison" and dead.tags == "TagA" and dead.keys == "order-7"
    assert dead.msg_id == sent.msg_id and dead.retry_topic == "Orders"
    assert dead.origin_message_id == sent.offset_msg_id            # first copy's offsetMsgId (checklist 60)
    assert dead.reconsume_times == 17
    assert len(rocketmq_broker.retry_messages("billing")) == 16
    time_travel("3h")
    assert len(deliveries) == 17                                   # the DLQ is not consumed


def test_delay_level_when_next_consume(rocketmq_broker, rocketmq_producer, rocketmq_consumer, time_travel):
    rocketmq_broker.create_topic("Orders", 1)
    producer = rocketmq_producer()
    producer.send(Message("Orders", b"slow"))
    producer.send(Message("Orders", b"hopeless"))
    times = []

    def listener(msgs, context):
        m = msgs[0]
        times.append((m.text, rocketmq_broker.now_ms, m.reconsume_times))
        if m.reconsume_times:
            return CONSUME_SUCCESS
        context.delay_level_when_next_consume = 5 if m.text == "slow" else -1   # 1 min / straight to DLQ
        return RECONSUME_LATER

    rocketmq_consumer("g", "Orders", listener=listener)
    t0 = rocketmq_broker.now_ms
    time_travel("59s")
    assert len(times) == 2
    time_travel("1s")
    assert times[2] == ("slow", t0 + 60_000, 1)                     # level 5 = 1 min, not 10 s (checklist 54)
    assert [m.text for m in rocketmq_broker.dlq_messages("g")] == ["hopeless"]   # checklist 55


def test_an_exception_counts_as_reconsume_later(rocketmq_broker, rocketmq_producer, rocketmq_consumer,
                                               time_travel):
    rocketmq_broker.create_topic("Orders", 1)
    rocketmq_producer().send(Message("Orders", b"x"))
    calls = []

    def listener(msgs, context):
        calls.append(msgs[0].reconsume_times)
        if len(calls) == 1:
            raise RuntimeError("database down")
        return CONSUME_SUCCESS

    consumer = rocketmq_consumer("g", "Orders", listener=listener)
    time_travel("10s")
    assert calls == [0, 1] and consumer.stats.listener_exceptions == 1


def test_send_back_rpc_failure_falls_back_to_the_inner_producer(rocketmq_broker, rocketmq_producer,
                                                                rocketmq_consumer, time_travel):  # checklist 75
    rocketmq_broker.create_topic("Orders", 1)
    sent = rocketmq_producer().send(Message("Orders", b"x", tags="TagA"))
    requests = []
    rocketmq_broker.hub.observe(lambda t, cmd: requests.append(cmd))
    rocketmq_broker.inject_fault(RequestCode.CONSUMER_SEND_MSG_BACK, times=1)   # the RPC times out once
    seen = []
    consumer = rocketmq_consumer("g", "Orders",
                                 listener=lambda msgs, ctx: seen.append(msgs[0]) or
                                 (RECONSUME_LATER if len(seen) == 1 else CONSUME_SUCCESS))
    assert consumer.stats.send_back_failed == 1 and consumer.stats.fallback_ok == 1
    [copy] = [c for c in requests if c.code == RequestCode.SEND_MESSAGE_V2]
    ext, props = copy.ext_fields, props_of(copy)
    assert ext["a"] == "CLIENT_INNER_PRODUCER" and ext["b"] == "%RETRY%g"
    assert ext["j"] == "1" and ext["l"] == "16"                                  # moved into the header
    assert props["DELAY"] == "3" and props["RECONSUME_TIME"] == "1" and props["MAX_RECONSUME_TIMES"] == "16"
    assert props["RETRY_TOPIC"] == "Orders" and props["ORIGIN_MESSAGE_ID"] == sent.msg_id
    assert props["UNIQ_KEY"] == sent.msg_id and props["TAGS"] == "TagA"
    time_travel("10s")
    assert len(seen) == 2 and seen[1].topic == "Orders" and seen[1].reconsume_times == 1
    assert seen[1].msg_id == sent.msg_id
    assert rocketmq_broker.committed_offset("g", "Orders", 0) == 1


def test_fallback_path_dead_letters_after_16_deliveries(rocketmq_broker, rocketmq_producer, rocketmq_consumer,
                                                        time_travel):
    # rocketmq-4x.md §7.3: the fallback sends RECONSUME_TIME = n + 1 and the 4.x broker
    # dead-letters when it is >= max, so this path stops one delivery earlier.
    rocketmq_broker.create_topic("Orders", 1)
    rocketmq_producer().send(Message("Orders", b"poison"))
    rocketmq_broker.inject_fault(RequestCode.CONSUMER_SEND_MSG_BACK)             # always
    seen = []
    rocketmq_consumer("g", "Orders", listener=lambda msgs, ctx: seen.append(msgs[0].reconsume_times) or
                      RECONSUME_LATER)
    time_travel("10h")
    assert seen == list(range(16))
    [dead] = rocketmq_broker.dlq_messages("g")
    assert dead.text == "poison" and dead.retry_topic == "Orders"


def test_write_permission_off_blocks_the_offset_and_recovers_when_back_on(
        rocketmq_broker, rocketmq_producer, rocketmq_consumer, time_travel):
    rocketmq_broker.create_topic("Payments", 1)
    producer = rocketmq_producer()
    for i in range(6):
        producer.send(Message("Payments", f"p{i}"))
    rocketmq_broker.set_writeable(False)                     # brokerPermission 6 -> 4
    start = rocketmq_broker.now_ms
    log = []

    def listener(msgs, context):
        m = msgs[0]
        log.append((rocketmq_broker.now_ms - start, m.text, m.reconsume_times, m.topic))
        if m.text == "p2" and sum(1 for e in log if e[1] == "p2") <= 6:
            return RECONSUME_LATER
        return CONSUME_SUCCESS

    consumer = rocketmq_consumer("ledger", "Payments", listener=listener)
    assert [e[1] for e in log] == ["p0", "p1", "p2", "p3", "p4", "p5"]
    # send-back refused (NO_PERMISSION), the fallback finds no writable %RETRY% queue:
    # p2 stays in the ProcessQueue and is consumed again locally every 5 s.
    assert consumer.stats.send_back_failed == 1 and consumer.stats.fallback_failed == 1
    time_travel("20s")
    assert [(t, r) for t, text, r, _ in log if text == "p2"] == [(0, 0), (5000, 1), (10000, 2), (15000, 3),
                                                                  (20000, 4)]
    # p3..p5 were consumed, but the committed offset is blocked at p2 (offset 2)
    assert rocketmq_broker.committed_offset("ledger", "Payments", 0) == 2
    assert consumer.offset_store.table[consumer.assigned_queues("Payments")[0]] == 2
    assert consumer.process_queues[consumer.assigned_queues("Payments")[0]].msg_count == 1
    assert rocketmq_broker.scheduled_messages() == [] and rocketmq_broker.retry_messages("ledger") == []

    rocketmq_broker.set_writeable(True)
    time_travel("5s")        # t=25 s: the 6th attempt fails again, and now the send-back succeeds
    assert consumer.stats.send_back_ok == 1
    assert consumer.offset_store.table[consumer.assigned_queues("Payments")[0]] == 6   # unblocked at once
    time_travel("5s")
    assert rocketmq_broker.committed_offset("ledger", "Payments", 0) == 6     # next 5 s persist
    time_travel("5s")        # the broker's retry: level 3 + its own count (0) = 10 s after t=25 s
    p2 = [e for e in log if e[1] == "p2"]
    assert p2[-1] == (35000, "p2", 1, "Payments")                             # from %RETRY%ledger
    # nothing lost, nothing consumed twice except the blocked message
    counts = {t: sum(1 for e in log if e[1] == t) for t in ("p0", "p1", "p2", "p3", "p4", "p5")}
    assert counts == {"p0": 1, "p1": 1, "p2": 7, "p3": 1, "p4": 1, "p5": 1}
    assert consumer.stats.local_retries == 5 and not rocketmq_broker.dlq_messages("ledger")
    time_travel("10s")
    assert rocketmq_broker.committed_offset("ledger", "%RETRY%ledger", 0) == 1


def test_local_retries_while_read_only_then_success_without_broker_retry(
        rocketmq_broker, rocketmq_producer, rocketmq_consumer, time_travel):  # checklist 74
    rocketmq_broker.create_topic("Payments", 1)
    rocketmq_producer().send(Message("Payments", b"p"))
    rocketmq_broker.set_writeable(False)
    attempts = []

    def listener(msgs, context):
        attempts.append(msgs[0].reconsume_times)
        return CONSUME_SUCCESS if len(attempts) == 4 else RECONSUME_LATER

    rocketmq_consumer("ledger", "Payments", listener=listener)
    time_travel("1m")
    assert attempts == [0, 1, 2, 3]
    assert rocketmq_broker.committed_offset("ledger", "Payments", 0) == 1


def test_a_listener_stuck_past_consume_timeout_gets_its_message_sent_back(
        rocketmq_broker, rocketmq_producer, rocketmq_consumer, time_travel):  # checklist 81
    rocketmq_broker.create_topic("Orders", 1)
    rocketmq_producer().send(Message("Orders", b"slow"))
    calls = []

    def listener(msgs, context):
        calls.append((rocketmq_broker.now_ms, msgs[0].reconsume_times))
        if len(calls) == 1:
            time_travel("31m")     # the listener takes 31 minutes; the consumer keeps running meanwhile
        return CONSUME_SUCCESS

    t0 = rocketmq_broker.now_ms
    consumer = rocketmq_consumer("g", "Orders", listener=listener)
    assert consumer.stats.expired == 1
    sent_back = rocketmq_broker.events.of_kind("sent_back")
    assert [(e.delay_level, e.time_ms - t0) for e in sent_back] == [(3, 30 * 60_000)]   # 2nd scan, level 3
    assert calls == [(t0, 0), (t0 + 30 * 60_000 + 10_000, 1)]      # re-delivered 10 s later
    time_travel("10s")
    assert rocketmq_broker.committed_offset("g", "Orders", 0) == 1


@pytest.fixture(params=["inprocess", "loopback"])
def rocketmq_transport(request):
    """Every test here runs twice: clients in process, and over the loopback transport
    (every command through the real codec)."""
    return request.param
