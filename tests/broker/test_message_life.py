"""One message's life (broker/views/message_life.py, issue 39 item 1), on cores in this process:
found by its message id, offset id, key or Pulsar message id; its timeline built from the
store (each copy, kept across a restart) and the core's delivery log (each delivery with
its client and attempt, marked as known from the event log only); the same after a
restart, where the store's part is unchanged and the event log's is gone and said so."""
from __future__ import annotations

from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.rocketmq_model.dead_letters import redrive_on
from rocketmq_emulator.broker.views.delivery_log import DeliveryLog
from rocketmq_emulator.broker.rocketmq_model.groups import SubscriptionGroupConfig
from rocketmq_emulator.broker.views.message_life import find, fold_repeats, life
from rocketmq_emulator.broker.operations import PopRequest, SendRequest
from rocketmq_emulator.broker.pulsar_model.cursors import SubType
from rocketmq_emulator.broker.pulsar_model.names import ledger_id, message_id_text
from rocketmq_emulator.client_sdk import RECONSUME_LATER, EmbeddedBroker, Message
from rocketmq_emulator.delay_scheduler import VirtualClock


def lines(found: dict, source: str | None = None) -> list[str]:
    return [e["text"] for e in found["timeline"] if source is None or e["source"] == source]


def poison_4x(broker) -> str:
    broker.create_topic("Orders", 1)
    broker.push_consumer("billing", "Orders", listener=lambda msgs, ctx: RECONSUME_LATER, max_reconsume_times=2)
    receipt = broker.producer("pg").send(Message("Orders", b"poison order 17", keys="order-17 eu"))
    broker.advance("2m")                   # levels 3 (10 s) and 4 (30 s), then the DLQ
    return receipt


def test_a_4x_poison_message_is_found_by_any_of_its_ids_and_its_life_is_in_order():
    broker = EmbeddedBroker()
    receipt = poison_4x(broker)
    cores = [broker.core]
    for text in (receipt.msg_id, receipt.offset_msg_id, "order-17", "eu"):
        [row] = find(cores, text)
        assert row["id"] == receipt.msg_id and row["topic"] == "Orders"
    assert find(cores, receipt.msg_id)[0]["matched"] == "message id"
    assert find(cores, "order-17")[0]["matched"] == "key"
    assert find(cores, "nothing-like-it") == []
    found = life(cores, receipt.offset_msg_id)
    assert found["id"] == found["msg_id"] == receipt.msg_id and found["keys"] == "order-17 eu"
    what = [e["what"] for e in found["timeline"] if e["what"] not in ("consumed", "pending")]
    assert what == ["stored", "delivered", "sent_back", "due", "delivered", "sent_back", "due", "delivered",
                    "dead_lettered"]
    delivered = [e for e in found["timeline"] if e["what"] == "delivered"]
    assert [e["attempt"] for e in delivered] == [0, 1, 2] and all(e["source"] == "events" for e in delivered)
    assert all(e["client"] and e["group"] == "billing" for e in delivered)
    [level3, level4] = [e for e in found["timeline"] if e["what"] == "sent_back"]
    assert (level3["level"], level4["level"]) == (3, 4) and level4["due_ms"] - level4["time_ms"] == 30_000
    assert found["now"] == ["dead-lettered by billing (reconsume times 3): stored in %DLQ%billing (dead now)"]
    assert [c["kind"] for c in found["copies"]] == ["original", "retry_scheduled", "retry_delivery",
                                                    "retry_scheduled", "retry_delivery", "dead_letter"]
    assert found["before_events"] is False
    broker.close()


def test_a_redriven_message_keeps_its_life_and_goes_on():
    broker = EmbeddedBroker()
    receipt = poison_4x(broker)
    [dead] = broker.dead_letters("billing")
    result = redrive_on([broker.core], "billing", None)
    broker.advance("1s")
    found = life([broker.core], dead.offset_msg_id)               # the dead letter's own id: the same message
    assert found["id"] == receipt.msg_id
    text = lines(found)
    [dead_line] = [t for t in text if t.startswith("dead-lettered")]
    assert f"re-driven as {result.sent[0][1]}" in dead_line
    at = next(i for i, t in enumerate(text) if t.startswith("re-driven from the dead letter " + dead.offset_msg_id))
    assert any(t.startswith("delivered to") and "reconsume times 0" in t for t in text[at:])
    broker.close()


def test_after_a_restart_the_store_proves_the_same_and_the_event_log_starts_again(tmp_path):
    clock = VirtualClock()
    core = BrokerCore.open(tmp_path / "store", clock)
    broker = EmbeddedBroker(core)
    receipt = poison_4x(broker)
    before = life([core], receipt.msg_id)
    broker.close()
    core.close()
    clock.advance(60_000)
    again = BrokerCore.open(tmp_path / "store", clock)
    after = life([again], receipt.msg_id)
    assert lines(after, "store") == lines(before, "store")
    assert lines(before, "events") and not lines(after, "events")
    assert after["before_events"] is True and after["events_since_ms"] == {"broker-a": clock.now_ms()}
    assert before["before_events"] is False
    again.close()


def test_a_5x_message_shows_each_receive_its_nack_its_expiry_and_what_is_in_flight_now():
    core = BrokerCore.in_memory()
    core.create_topic("T5", 1)
    core.update_group(SubscriptionGroupConfig("g5", retry_max_times=3))
    ch = core.connect()
    core.send(SendRequest("pg", "T5", b"poison", 0, {"UNIQ_KEY": "U5", "KEYS": "k5"}), ch)
    [first] = core.pop(PopRequest("g5", "T5", 1, 10_000, client="client-1")).messages
    core.advance_clock(10_000)                             # its invisible time ends: a retry copy
    [second] = core.pop(PopRequest("g5", "T5", 1, 10_000, client="client-1")).messages
    core.change_invisible_time("g5", "T5", second.receipt_handle, 0)      # a negative ack
    [third] = core.pop(PopRequest("g5", "T5", 1, 60_000, client="client-2")).messages
    assert (first.delivery_attempt, second.delivery_attempt, third.delivery_attempt) == (1, 2, 3)
    found = life([core], "U5")
    what = [(e["what"], e["source"]) for e in found["timeline"] if e["what"] not in ("consumed", "pending")]
    assert what == [("stored", "store"), ("delivered", "events"), ("expired", "events"), ("retry_copy", "store"),
                    ("delivered", "events"), ("nack", "events"), ("retry_copy", "store"), ("delivered", "events"),
                    ("in_flight", "live")]
    assert [e["client"] for e in found["timeline"] if e["what"] == "delivered"] == ["client-1", "client-1", "client-2"]
    assert found["now"] == ["in flight for g5: invisible until 2024-01-01T00:01:10.000Z"]
    core.ack("g5", "T5", third.receipt_handle)
    history = [e["what"] for e in life([core], "U5")["timeline"] if e["time_ms"] is not None]
    now = [e["text"] for e in life([core], "U5")["timeline"] if e["time_ms"] is None]
    assert history[-2:] == ["delivered", "ack"]
    assert now[-1] == "g5 is done with %RETRY%g5+T5 queue 0 offsets 0-1 (2 copies) (its committed offset 2 is past it)"


def test_a_pulsar_message_is_found_by_its_pulsar_id_and_its_dead_letter_by_its_origin():
    core = BrokerCore.in_memory()
    topic, dlq = "pulsar|public|default|orders", "pulsar|public|default|orders-billing-DLQ"
    core.ensure_pulsar_topic(topic)
    core.ensure_pulsar_topic(dlq)
    ch = core.connect()
    sent = core.send(SendRequest("", topic, b"poison", 0, {"KEYS": "order-p"}), ch)
    consumer = object()
    core.subscriptions.subscribe("billing", topic, consumer, SubType.SHARED, earliest=True, label="billing-1")
    core.subscriptions.flow(consumer, 10)
    for count in (0, 1):
        [d] = core.subscriptions.dispatch("billing", topic)
        assert d.redelivery_count == count
        core.subscriptions.redeliver(consumer, [d.offset])
    [d] = core.subscriptions.dispatch("billing", topic)
    # what the Pulsar front stores for a client's dead letter: its original in the store's terms
    core.send(SendRequest("", dlq, b"poison", 0, {"REAL_TOPIC": topic, "ORIGIN_MESSAGE_ID": sent.msg_id}), ch)
    core.subscriptions.ack(consumer, [d.offset])
    pulsar_id = f"({ledger_id(topic)},0,-1,-1)"                      # as the Python client prints it
    [row] = find([core], pulsar_id)
    assert row["matched"] == "Pulsar message id" and row["topic"] == "persistent://public/default/orders"
    found = life([core], pulsar_id)
    assert found["offset_msg_id"] == sent.msg_id and found["pulsar_message_id"] == message_id_text(topic, 0)
    what = [e["what"] for e in found["timeline"]]
    assert what == ["stored", "delivered", "pulsar_nack", "delivered", "pulsar_nack", "delivered", "dead_lettered",
                    "pulsar_ack", "consumed"]
    assert [e["attempt"] for e in found["timeline"] if e["what"] == "delivered"] == [0, 1, 2]
    assert {e["client"] for e in found["timeline"] if e["what"] == "delivered"} == {"billing-1"}
    [dead] = [e for e in found["timeline"] if e["what"] == "dead_lettered"]
    assert dead["group"] == "billing" and "orders-billing-DLQ" in dead["text"]
    assert life([core], dead["offset_msg_id"])["offset_msg_id"] == sent.msg_id     # the letter leads to it


def test_the_delivery_log_is_bounded_and_says_what_it_dropped():
    log = DeliveryLog(since_ms=0, capacity=3)
    for i in range(5):
        log.pulled(i, "g", "T", 0, i, i + 1, None, "c")
    log.pulled(9, "g", "U", 0, 0, 32, frozenset({7}), "c")
    assert len(log) == 3 and log.dropped_upto_ms == 2
    assert [e[0] for e in log.about("T", 0, 4)] == [4] and log.about("T", 0, 1) == []
    assert log.about("U", 0, 5, tags_code=7) and log.about("U", 0, 5, tags_code=8) == []   # filtered away
    assert DeliveryLog(0, capacity=0).about("T", 0, 0) == []


def test_now_says_where_a_message_waits_and_until_when():
    broker = EmbeddedBroker()
    broker.create_topic("Orders", 1)
    broker.push_consumer("billing", "Orders", listener=lambda msgs, ctx: RECONSUME_LATER)
    receipt = broker.producer("pg").send(Message("Orders", b"poison"))
    broker.run_until_idle()
    found = life([broker.core], receipt.msg_id)
    assert found["now"] == ["billing failed it (failure 1): sent back to delay level 3 (10 s) (waiting now, due "
                            "2024-01-01T00:00:10.000Z)"]
    broker.advance("10s")
    assert "waiting now, due 2024-01-01T00:00:40.000Z" in life([broker.core], receipt.msg_id)["now"][0]
    broker.close()


def kept_index(core):
    """index_of as the dashboard keeps it: one index, refreshed at each call."""
    from rocketmq_emulator.broker.views.retry_ladders import RetryIndex

    index = RetryIndex(core)
    return lambda c: (index.refresh(), index)[1]


def test_following_a_message_does_not_read_what_producers_store_meanwhile():
    broker = EmbeddedBroker()
    receipt = poison_4x(broker)
    core = broker.core
    index_of = kept_index(core)
    first = life([core], receipt.msg_id, index_of)
    broker.create_topic("Busy", 4)
    producer = broker.producer("busy")
    for i in range(500):
        producer.send(Message("Busy", b"x"))
    asked = []
    query = core.store.query_by_key
    core.store.query_by_key = lambda *a: asked.append(a) or query(*a)
    again = life([core], receipt.msg_id, index_of)
    assert asked == [] and lines(again, "store") == lines(first, "store")
    core.store.query_by_key = query
    broker.close()


def test_a_delayed_send_come_due_joins_the_life_a_kept_index_follows():
    broker = EmbeddedBroker()
    broker.create_topic("Orders", 1)
    msg = Message("Orders", b"later")
    msg.delay_time_level = 2
    receipt = broker.producer("pg").send(msg)
    index_of = kept_index(broker.core)
    waiting = life([broker.core], receipt.msg_id, index_of)
    assert [e["what"] for e in waiting["timeline"]] == ["delayed"] and "waiting now" in waiting["now"][0]
    broker.advance("5s")
    due = life([broker.core], receipt.msg_id, index_of)
    assert [e["what"] for e in due["timeline"] if e["time_ms"] is not None] == ["delayed", "due"]
    broker.close()


def test_a_producers_resend_of_a_young_message_joins_it_and_an_old_one_is_not_looked_up_again():
    core = BrokerCore.in_memory()
    core.create_topic("Orders", 1)
    ch = core.connect()
    send = lambda: core.send(SendRequest("pg", "Orders", b"m", 0, {"UNIQ_KEY": "U1"}), ch)   # noqa: E731
    send()
    index_of = kept_index(core)
    assert len(life([core], "U1", index_of)["copies"]) == 1
    send()                                       # the same message id again: a resend after a timeout
    seen = [len(life([core], "U1", index_of)["copies"]) for _ in range(16)]
    assert seen[0] == 1 and seen[-1] == 2        # found at the 16th look at the latest
    core.advance_clock(20_000)                   # no longer young: its places are kept as they are
    asked = []
    query = core.store.query_by_key
    core.store.query_by_key = lambda *a: asked.append(a) or query(*a)
    for _ in range(40):
        life([core], "U1", index_of)
    assert asked == []
    core.store.query_by_key = query


def test_a_long_ladder_is_done_with_in_one_folded_line_not_one_per_retry_copy():
    """16 retries: billing is done with each of its 16 %RETRY% copies in queue 0 - one line
    saying so, naming the offsets and how many, not 16 that differ only in the offset."""
    broker = EmbeddedBroker()
    broker.create_topic("Orders", 1)
    broker.push_consumer("billing", "Orders", listener=lambda msgs, ctx: RECONSUME_LATER)
    receipt = broker.producer("pg").send(Message("Orders", b"poison"))
    broker.advance("6h")                     # the whole ladder, 16 retries, then the DLQ
    found = life([broker.core], receipt.msg_id)
    done = [e for e in found["timeline"] if e["what"] == "consumed" and e["topic"] == "%RETRY%billing"]
    assert [e["text"] for e in done] == [
        "billing is done with %RETRY%billing queue 0 offsets 0-15 (16 copies) (its committed offset 16 is past it)"]
    assert done[0]["folded"] == 16 and done[0]["queue_offsets"] == list(range(16))
    assert found["timeline_total"] == len(found["timeline"])        # nothing cut: the page says nothing is missing
    delivered = [e for e in found["timeline"] if e["what"] == "delivered"]
    assert len(delivered) == 17 and "folded" not in delivered[0]      # each at its own time: never folded
    broker.close()


def test_folding_keeps_lines_apart_that_differ_in_more_than_the_offset():
    def line(off, text, group="g"):
        return {"time_ms": None, "what": "consumed", "source": "store", "broker": "b", "group": group,
                "topic": "T", "queue_id": 0, "queue_offset": off, "text": text.format(off)}
    entries = [line(3, "g is done with T queue 0 offset {} (its committed offset 9 is past it)"),
               line(4, "g is done with T queue 0 offset {} (its committed offset 9 is past it)"),
               line(6, "g is done with T queue 0 offset {} (its committed offset 9 is past it)"),
               line(7, "h is done with T queue 0 offset {} (its committed offset 9 is past it)", group="h"),
               line(8, "g is done with T queue 0 offset {} (its committed offset 9 is past it)")]
    folded = fold_repeats(entries)
    assert [e["text"] for e in folded] == [
        "g is done with T queue 0 offsets 3-4, 6 (3 copies) (its committed offset 9 is past it)",
        "h is done with T queue 0 offset 7 (its committed offset 9 is past it)",
        "g is done with T queue 0 offset 8 (its committed offset 9 is past it)"]


def test_the_page_says_which_clock_each_time_is_on():
    """Born is what the producer stamped; stored (and every line's time) the broker's
    clock. The SDK's producer in this process stamps the broker's (virtual) clock, so both
    are 2024 there; a real client stamps its wall clock, and the page says whose it is."""
    broker = EmbeddedBroker()
    broker.create_topic("Orders", 1)
    receipt = broker.producer("pg").send(Message("Orders", b"hello"))
    found = life([broker.core], receipt.msg_id)
    assert found["born_ms"] == found["store_ms"] == broker.core.clock.now_ms()      # 2024-01-01, virtual
    assert found["clocks"] == {"born_ms": "the producer's clock", "store_ms": "the broker's virtual clock"}
    wall = 1_795_000_000_000                                  # a real client's wall clock, in 2026
    broker.core.send(SendRequest("pg", "Orders", b"from afar", 0, {"UNIQ_KEY": "WALL1"}, born_timestamp=wall),
                     broker.core.connect())
    far = life([broker.core], "WALL1")
    assert far["born_ms"] == wall and far["store_ms"] < wall and far["clocks"]["born_ms"] == "the producer's clock"
    broker.close()
