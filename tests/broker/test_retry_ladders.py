"""Retry ladders and the consumers of each dialect as the dashboard shows them (broker/
retry_ladders.py and consumer_views.py, issue 39 items 2 and 4): per 4.x delay level, per
5.x delivery attempt, per Pulsar redelivery count — waiting now, passed through,
dead-lettered — the messages behind a bar a page at a time, and each record read once."""
from __future__ import annotations

from rocketmq_emulator.broker.views.consumer_views import consumer_rows, group_detail
from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.rocketmq_model.groups import SubscriptionGroupConfig
from rocketmq_emulator.broker.rocketmq_model.invisible_time import SHARDING_KEY
from rocketmq_emulator.broker.operations import PopRequest, SendBack, SendRequest
from rocketmq_emulator.broker.pulsar_model.cursors import SubType
from rocketmq_emulator.broker.views.retry_ladders import RetryIndex, bar_messages, ladder
from rocketmq_emulator.client_sdk import RECONSUME_LATER, EmbeddedBroker, Message
from rocketmq_emulator.delay_scheduler import VirtualClock


def steps(lad: dict) -> dict[int, tuple[int, int]]:
    return {s["step"]: (s["waiting"], s["passed"]) for s in lad["steps"] if s["waiting"] or s["passed"]}


def test_a_4x_ladder_moves_from_waiting_to_passed_as_the_clock_moves_and_lists_each_bar():
    broker = EmbeddedBroker()
    broker.create_topic("Orders", 1)
    broker.push_consumer("billing", "Orders", listener=lambda msgs, ctx: RECONSUME_LATER, max_reconsume_times=2)
    producer = broker.producer("pg")
    for i in range(3):
        producer.send(Message("Orders", b"poison %d" % i, keys=f"order-{i}"))
    broker.run_until_idle()
    core = broker.core
    index = RetryIndex(core)
    index.refresh()
    lad = ladder(core, index, "billing", "4.x")
    assert steps(lad) == {3: (3, 0)} and lad["dead_lettered"] == 0
    [l3] = [s for s in lad["steps"] if s["step"] == 3]
    assert l3["delay_ms"] == 10_000 and l3["next_due_ms"] == core.clock.now_ms() + 10_000
    rows, total = bar_messages(core, index, "billing", "4.x", 3, "waiting", 1, 1)      # page 2 of 1-row pages
    assert total == 3 and [r["keys"] for r in rows] == ["order-1"] and rows[0]["due_ms"] == l3["next_due_ms"]
    broker.advance("10s")
    index.refresh()
    assert steps(ladder(core, index, "billing", "4.x")) == {3: (0, 3), 4: (3, 0)}
    broker.advance("2m")
    index.refresh()
    lad = ladder(core, index, "billing", "4.x")
    assert steps(lad) == {3: (0, 3), 4: (0, 3)} and lad["dead_lettered"] == 3
    rows, total = bar_messages(core, index, "billing", "4.x", None, "dead", 0, 50)
    assert total == 3 and sorted(r["keys"] for r in rows) == ["order-0", "order-1", "order-2"]
    assert bar_messages(core, index, "billing", "4.x", 4, "passed")[1] == 3
    broker.close()


def test_the_index_reads_each_record_once():
    broker = EmbeddedBroker()
    broker.create_topic("Orders", 1)
    broker.push_consumer("billing", "Orders", listener=lambda msgs, ctx: RECONSUME_LATER)
    for i in range(20):
        broker.producer("pg").send(Message("Orders", b"x"))
    broker.run_until_idle()
    core = broker.core
    reads = []
    read = core.store.read
    core.store.read = lambda phys: reads.append(phys) or read(phys)
    index = RetryIndex(core)
    index.refresh()
    assert len(reads) == 20                      # the 20 send-backs waiting at level 3
    index.refresh()
    assert len(reads) == 20                      # nothing new: nothing read again
    assert sum(index.waiting[3].values()) == 20
    core.store.read = read
    broker.close()


def test_a_5x_ladder_counts_attempts_and_a_fifo_group_shows_its_blocked_message_groups():
    core = BrokerCore.in_memory()
    core.create_topic("T5", 1)
    core.update_group(SubscriptionGroupConfig("g5", retry_max_times=3))
    core.update_group(SubscriptionGroupConfig("fifo", retry_max_times=3, consume_message_orderly=True))
    ch = core.connect()
    for i in range(2):
        core.send(SendRequest("pg", "T5", b"m%d" % i, 0, {"UNIQ_KEY": f"U{i}", SHARDING_KEY: "cart-1"}), ch)
    assert len(core.pop(PopRequest("g5", "T5", 2, 10_000)).messages) == 2
    core.advance_clock(10_000)                       # both fail: retry copies for attempt 2
    [again] = core.pop(PopRequest("g5", "T5", 1, 10_000)).messages         # one of them is received again
    assert again.delivery_attempt == 2
    index = RetryIndex(core)
    index.refresh()
    lad = ladder(core, index, "g5", "5.x")
    assert steps(lad) == {2: (2, 0)}                 # one in flight, one not received yet: both wait
    assert [s["delay_ms"] for s in lad["steps"][:2]] == [10_000, 30_000]
    [row], total = consumer_rows([core], "5.x", lambda c: index, "g5")
    assert total == 1 and row["invisible"] == 1 and row["attempts"] == {"2": 1} and row["retry_waiting"] == 2
    # FIFO: the first message of cart-1 fails in place; the second waits behind it
    [first] = core.pop(PopRequest("fifo", "T5", 2, 10_000, fifo=True)).messages
    core.advance_clock(10_000)
    detail = group_detail([core], "fifo", "5.x", lambda c: index)
    assert detail["fifo"] and [(b["message_group"], b["deliveries"], b["msg_id"]) for b in detail["blocked"]] == \
        [("cart-1", 1, "U0")]
    assert steps(detail["ladder"]) == {2: (1, 0)}


def test_a_pulsar_ladder_counts_redeliveries_and_keeps_what_passed_across_a_restart(tmp_path):
    clock = VirtualClock()
    core = BrokerCore.open(tmp_path / "store", clock)
    topic = "pulsar|public|default|orders"
    core.ensure_pulsar_topic(topic)
    ch = core.connect()
    for i in range(3):
        core.send(SendRequest("", topic, b"m%d" % i, 0, {}), ch)
    consumer = object()
    core.subscriptions.subscribe("billing", topic, consumer, SubType.SHARED, earliest=True, label="c1")
    core.subscriptions.flow(consumer, 100)
    offsets = [d.offset for d in core.subscriptions.dispatch("billing", topic)]
    core.subscriptions.redeliver(consumer, offsets)               # all three: count 1
    core.subscriptions.dispatch("billing", topic)
    core.subscriptions.redeliver(consumer, offsets[:1])           # the first again: count 2
    core.subscriptions.ack(consumer, offsets[1:])
    index = RetryIndex(core)
    index.refresh()
    assert steps(ladder(core, index, "billing", "pulsar")) == {1: (0, 3), 2: (1, 0)}
    rows, total = bar_messages(core, index, "billing", "pulsar", 2, "waiting")
    assert total == 1 and rows[0]["body"] == "m0" and rows[0]["redelivery_count"] == 2
    rows, total = bar_messages(core, index, "billing", "pulsar", 1, "passed")      # each one the ladder counts
    assert total == 3 and sorted(r["body"] for r in rows) == ["m0", "m1", "m2"]
    assert {(r["redelivery_count"], r["known_from"]) for r in rows} == {(1, "event log")}
    [sub], _ = consumer_rows([core], "pulsar", lambda c: index)
    assert (sub["type"], sub["consumers"], sub["backlog"], sub["redelivery_counts"]) == ("Shared", ["c1"], 1, {"2": 1})
    core.close()
    again = BrokerCore.open(tmp_path / "store", clock)
    index = RetryIndex(again)
    index.refresh()
    assert steps(ladder(again, index, "billing", "pulsar")) == {1: (0, 3), 2: (1, 0)}     # saved with the cursor
    assert bar_messages(again, index, "billing", "pulsar", 1, "passed") == ([], 0)       # which ones: the event log knew
    again.close()


def test_consumer_pages_are_paged_and_filtered_and_show_4x_clients_language_and_version():
    broker = EmbeddedBroker()
    broker.create_topic("Orders", 1)
    for i in range(120):
        broker.push_consumer(f"group-{i:03d}", "Orders", listener=lambda msgs, ctx: RECONSUME_LATER)
    broker.run_until_idle()
    core = broker.core
    index = RetryIndex(core)
    rows, total = consumer_rows([core], "4.x", lambda c: index, "", 100, 50)
    assert total == 120 and [r["group"] for r in rows] == [f"group-{i:03d}" for i in range(100, 120)]
    rows, total = consumer_rows([core], "4.x", lambda c: index, "group-01", 0, 50)
    assert total == 10
    [client] = rows[0]["clients"]
    assert client["language"] and client["version"] and client["client_id"]
    assert consumer_rows([core], "pulsar", lambda c: index) == ([], 0)
    broker.close()
