"""The dashboard's live feed and its dead letters (issue 35, item 10): every retry
lifecycle event names its group and the delay level it is about, a dead letter its keys.

  delayed / sent_back  the level it waits at
  redelivered          the group whose %RETRY% topic it is re-stored in, and the level it
                       waited at (a producer's delayed send has no group)
  dead_lettered        the group; level 0, none (the DLQ has none: the page shows "-")"""
from __future__ import annotations

from rocketmq_emulator.broker.fronts.http.dashboard import EventFeed, dashboard_state
from rocketmq_emulator.client_sdk import RECONSUME_LATER, EmbeddedBroker, Message


def test_redelivered_and_dead_lettered_events_carry_their_group_and_level():
    broker = EmbeddedBroker()
    feed = EventFeed([broker.core])
    broker.create_topic("Orders", 1)
    broker.push_consumer("billing", "Orders", listener=lambda msgs, ctx: RECONSUME_LATER, max_reconsume_times=2)
    broker.producer("pg").send(Message("Orders", b"poison", keys="order-17"))
    broker.advance("2m")                       # levels 3 (10 s) and 4 (30 s), then the DLQ
    events = feed.after(0)
    redelivered = [e for e in events if e["kind"] == "redelivered"]
    assert [(e["group"], e["delay_level"]) for e in redelivered] == [("billing", 3), ("billing", 4)]
    [dead] = [e for e in events if e["kind"] == "dead_lettered"]
    assert dead["group"] == "billing" and dead["delay_level"] == 0      # 0: about no level (the page shows "-")
    state = dashboard_state([broker.core])
    [row] = state["dead_letters"]
    assert row["keys"] == "order-17"
    feed.close()
    broker.close()


def test_a_delayed_send_is_redelivered_with_its_level_and_no_group():
    broker = EmbeddedBroker()
    feed = EventFeed([broker.core])
    broker.create_topic("Orders", 1)
    msg = Message("Orders", b"later")
    msg.delay_time_level = 2
    broker.producer("pg").send(msg)
    broker.advance("5s")
    [event] = [e for e in feed.after(0) if e["kind"] == "redelivered"]
    assert event["delay_level"] == 2 and "group" not in event
    feed.close()
    broker.close()


def test_the_dashboard_state_lists_transactions_waiting_with_their_next_check():
    from rocketmq_emulator.client_sdk import LocalTransactionState

    broker = EmbeddedBroker()
    broker.create_topic("Payments", 1)
    producer = broker.producer("tx-app", transaction_checker=lambda msg: LocalTransactionState.UNKNOW)
    sent = producer.send_message_in_transaction(Message("Payments", b"undecided"),
                                                lambda m, a: LocalTransactionState.UNKNOW)
    start = broker.now_ms
    [row] = dashboard_state([broker.core])["half_messages"]
    assert (row["transaction_id"], row["topic"], row["producer_group"], row["checks"], row["next_check_ms"]) == \
        (sent.transaction_id, "Payments", "tx-app", 0, start + 6_000)
    broker.advance("6s")
    [row] = dashboard_state([broker.core])["half_messages"]
    assert row["checks"] == 1 and row["next_check_ms"] == start + 66_000
    broker.close()

