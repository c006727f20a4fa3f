"""A listener that overruns consumeTimeout while the broker is read-only.

The consumer's expiry check (cleanExpiredMsg, every consume_timeout minutes) then
cannot send the message back: neither CONSUMER_SEND_MSG_BACK nor the fallback publish to
%RETRY%<group> gets through. Upstream leaves the message in the ProcessQueue, so the
verdict of the listener that is still running decides: a late RECONSUME_LATER goes the
usual way (send-back, else a local retry every 5 s with reconsumeTimes + 1), a late
CONSUME_SUCCESS acks it. Either way nothing is dropped and the committed offset does not
pass the message before it is settled.

Found while chasing a simulation that reported message #0 lost (the simulator had
assumed the expiry always takes the message; see tests/simulation).
"""
from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, RECONSUME_LATER, Message

OVERRUN = "31m"      # past two expiry scans (15 and 30 min)


def _only_pq(consumer):
    [pq] = [pq for mq, pq in consumer.process_queues.items() if mq.topic == "Orders"]
    return pq


def test_a_late_failure_whose_expiry_could_not_send_it_back_is_retried_locally(
        rocketmq_broker, rocketmq_producer, rocketmq_consumer, time_travel):
    rocketmq_broker.create_topic("Orders", 1)
    rocketmq_producer().send(Message("Orders", b"poison"))
    rocketmq_broker.set_writeable(False)
    t0 = rocketmq_broker.now_ms
    calls = []

    def listener(msgs, context):
        calls.append((rocketmq_broker.now_ms - t0, msgs[0].reconsume_times, msgs[0].topic))
        if len(calls) == 1:
            time_travel(OVERRUN)       # the consumer keeps running meanwhile
            return RECONSUME_LATER
        return CONSUME_SUCCESS if len(calls) == 4 else RECONSUME_LATER

    consumer = rocketmq_consumer("g", "Orders", listener=listener)
    s = consumer.stats
    # the 30-min scan found it expired, and could not hand it to the broker: it stays
    assert s.expired == 0 and s.send_back_failed == 2 and s.fallback_failed == 2
    pq = _only_pq(consumer)
    assert [m.text for m in pq.msg_tree.values()] == ["poison"]
    assert s.local_retries == 1
    end = 31 * 60_000
    time_travel("5s")                  # the local retry, same copy, reconsumeTimes + 1
    assert calls == [(0, 0, "Orders"), (end + 5_000, 1, "Orders")]
    assert rocketmq_broker.committed_offset("g", "Orders", 0) <= 0
    rocketmq_broker.set_writeable(True)
    time_travel("5s")                  # fails again; now the send-back gets through
    assert calls[-1] == (end + 10_000, 2, "Orders") and s.send_back_ok == 1
    assert pq.msg_count == 0
    # The broker counts from the copy it stored (reconsumeTimes 0), not the local
    # retries: level 3 (10 s), and the retry copy has reconsumeTimes 1. It succeeds.
    time_travel("1m")
    assert calls[-1] == (end + 20_000, 1, "Orders") and len(calls) == 4
    time_travel("1h")
    assert len(calls) == 4 and not rocketmq_broker.dlq_messages("g")
    assert rocketmq_broker.committed_offset("g", "Orders", 0) == 1


def test_a_late_success_whose_expiry_could_not_send_it_back_is_acked_once(
        rocketmq_broker, rocketmq_producer, rocketmq_consumer, time_travel):
    rocketmq_broker.create_topic("Orders", 1)
    rocketmq_producer().send(Message("Orders", b"slow"))
    rocketmq_broker.set_writeable(False)
    calls = []

    def listener(msgs, context):
        calls.append(msgs[0].reconsume_times)
        if len(calls) == 1:
            time_travel(OVERRUN)
        return CONSUME_SUCCESS

    consumer = rocketmq_consumer("g", "Orders", listener=listener)
    s = consumer.stats
    assert s.expired == 0 and s.send_back_failed == 1 and s.fallback_failed == 1
    assert s.consume_ok == 1 and _only_pq(consumer).msg_count == 0
    rocketmq_broker.set_writeable(True)
    time_travel("1h")
    assert calls == [0]                # the listener's own verdict settled it: no retry
    assert not rocketmq_broker.retry_messages("g") and not rocketmq_broker.scheduled_messages()
    assert rocketmq_broker.committed_offset("g", "Orders", 0) == 1
