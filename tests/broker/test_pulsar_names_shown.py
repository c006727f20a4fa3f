"""A Pulsar topic by its Pulsar name in what the HTTP front shows (issue 47, item 6): the
dashboard's views and /metrics say `persistent://public/default/payments`, never the
store's `pulsar|public|default|payments`, for 4.x and 5.x clients of a Pulsar topic too."""
from __future__ import annotations

from rocketmq_emulator.broker.fronts.http.dashboard import DashboardViews, EventFeed, dashboard_state
from rocketmq_emulator.broker.fronts.http.metrics import BrokerCollector
from rocketmq_emulator.broker.rocketmq_model.groups import SubscriptionGroupConfig
from rocketmq_emulator.broker.operations import CommitOutcome, OffsetCommit, PopRequest
from rocketmq_emulator.client_sdk import RECONSUME_LATER, EmbeddedBroker, LocalTransactionState, Message

FULL, STORED = "persistent://public/default/payments", "pulsar|public|default|payments"


def test_a_pulsar_topic_is_named_by_its_pulsar_name_in_the_feed_the_transactions_and_the_5x_flight():
    """Issue 47, item 6: a 4.x consumer's retries of a Pulsar topic, a half message of one
    and a 5.x receive of one show `persistent://...`, never the store's `pulsar|...`; the
    consumers page's filter finds a group by the Pulsar name of a topic it reads."""
    broker = EmbeddedBroker()
    feed = EventFeed([broker.core])
    broker.core.ensure_pulsar_topic(STORED)
    broker.push_consumer("billing", STORED, listener=lambda msgs, ctx: RECONSUME_LATER, max_reconsume_times=1)
    broker.producer("pg").send(Message(STORED, b"poison", keys="order-17"))
    broker.advance("1m")
    events = feed.after(0)
    named = {e.get("real_topic") or e["topic"] for e in events}     # what the page's topic column shows
    assert FULL in named and not any("pulsar|" in t for t in named), named
    producer = broker.producer("tx-app", transaction_checker=lambda msg: LocalTransactionState.UNKNOW)
    producer.send_message_in_transaction(Message(STORED, b"undecided"), lambda m, a: LocalTransactionState.UNKNOW)
    [row] = dashboard_state([broker.core])["half_messages"]
    assert row["topic"] == FULL
    views = DashboardViews(lambda: [broker.core])
    assert [r["group"] for r in views.consumers("4.x", FULL, 0, 10)["rows"]] == ["billing"]   # found by that name
    [popped] = broker.core.pop(PopRequest("g5", STORED, 1, 60_000, client="client-5")).messages
    [flight] = views.group("g5", "5.x")["in_flight"]
    assert (flight["topic"], flight["queue_offset"]) == (FULL, popped.queue_offset)
    broker.core.update_group(SubscriptionGroupConfig("fifo", consume_message_orderly=True))
    broker.core.pop(PopRequest("fifo", STORED, 1, 10_000, fifo=True))
    broker.advance("10s")                             # its first message failed in place: the queue waits
    [blocked] = views.group("fifo", "5.x")["blocked"]
    assert blocked["topic"] == FULL
    feed.close()
    broker.close()


def test_metrics_label_a_pulsar_topic_by_its_pulsar_name():
    broker = EmbeddedBroker()
    broker.core.ensure_pulsar_topic(STORED)
    broker.producer("pg").send(Message(STORED, b"paid"))
    broker.core.update_group(SubscriptionGroupConfig("billing"))
    assert broker.core.commit_offset(OffsetCommit("billing", STORED, 0, 0)) is CommitOutcome.COMMITTED
    topics = {(family.name, sample.labels["topic"]) for family in BrokerCollector(lambda: [broker.core]).collect()
              for sample in family.samples if "topic" in sample.labels}
    assert {("rocketmq_emulator_topic_messages", FULL), ("rocketmq_emulator_group_lag", FULL),
            ("rocketmq_emulator_produced_per_second", FULL)} <= topics
    assert not any("pulsar|" in t for _, t in topics), topics
    broker.close()
