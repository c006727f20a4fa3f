"""accounting (the simulator's definition) against the scripted run's truth."""
from __future__ import annotations

import pytest

from rocketmq_emulator.spark_analytics.store_accounts import account_store
from rocketmq_emulator.store.accounting import Kind, account, classify, normalize_offsets
from sa_scenario import GROUP_A, GROUP_B


def test_counts_match_the_truth(scenario):
    t = scenario.truth
    a = account_store(scenario.snap)
    assert a.produced == sum(t.produced.values()) == 59
    assert a.send_backs == sum(t.send_backs.values()) == 46
    assert a.dead_lettered == len(t.dead) == 2
    assert a.succeeded == sum(t.succeeded.values())
    per = {(g.group, g.topic): g for g in a.per_group}
    assert set(per) == {(GROUP_B, "orders"), (GROUP_A, "payments")}
    b = per[(GROUP_B, "orders")]
    assert (b.produced, b.succeeded, b.dead_lettered, b.send_backs) == (45, t.succeeded[GROUP_B], 2, 46)
    assert b.retried == {1: 4, 2: 4, 16: 2}
    assert b.in_flight == 4                                   # the four messages nobody consumed yet
    p = per[(GROUP_A, "payments")]
    assert (p.produced, p.succeeded, p.dead_lettered, p.send_backs) == (14, t.succeeded[GROUP_A], 0, 0)
    assert a.produced_by_topic == dict(t.produced)


def test_store_and_snapshot_differ_only_by_what_came_later(scenario):
    later = account_store(scenario.store)                     # 30 payments written after the snapshot
    assert later.produced == account_store(scenario.snap).produced + 30


def test_classify():
    assert classify("orders", {}) is Kind.ORIGINAL
    assert classify("orders", {"REAL_TOPIC": "orders", "DELAY": "2"}) is Kind.DELAYED_DELIVERY
    assert classify("SCHEDULE_TOPIC_XXXX", {"REAL_TOPIC": "orders"}) is Kind.DELAYED_ORIGINAL
    assert classify("SCHEDULE_TOPIC_XXXX", {"REAL_TOPIC": "%RETRY%g"}) is Kind.RETRY_SCHEDULED
    assert classify("%RETRY%g", {"REAL_TOPIC": "%RETRY%g"}) is Kind.RETRY_DELIVERY
    assert classify("%RETRY%g", {}) is Kind.RETRY_DIRECT
    assert classify("%DLQ%g", {}) is Kind.DEAD_LETTER
    assert classify("TBW102", {}) is Kind.OTHER
    assert classify("orders", {}, sys_flag=0x4) is Kind.OTHER     # a prepared transaction half


def test_offset_table_forms():
    doc = {"offsetTable": {"orders@billing": {"0": 3, "1": 4}}}
    assert normalize_offsets(doc) == normalize_offsets(doc["offsetTable"]) == \
        normalize_offsets({"orders@billing": {0: 3, 1: 4}}) == {("orders", "billing"): {0: 3, 1: 4}}


class _Rec:
    def __init__(self, topic, props, qid=0, qoff=0, recon=0, phys=0):
        self.topic, self.properties, self.queue_id, self.queue_offset = topic, props, qid, qoff
        self.reconsume_times, self.commit_log_offset, self.sys_flag = recon, phys, 0
        self.offset_msg_id = f"ID{phys}"


def _as_head(r: _Rec):
    """The same record stored and read back as a RecordHead (properties unparsed)."""
    from rocketmq_emulator.store.record_view import head
    from rocketmq_emulator.store.records import MessageRecord, encode_record

    return head(encode_record(MessageRecord(topic=r.topic, properties=r.properties, queue_id=r.queue_id,
                                            queue_offset=r.queue_offset, reconsume_times=r.reconsume_times,
                                            commit_log_offset=r.commit_log_offset)))


@pytest.mark.parametrize("as_heads", [False, True], ids=["mappings", "heads"])
def test_client_fallback_copies_find_their_message_by_uniq_key(as_heads):
    recs = [_Rec("orders", {"UNIQ_KEY": "U1"}, phys=0),
            # the client's fallback send-back: ORIGIN_MESSAGE_ID is the client msgId (UNIQ_KEY)
            _Rec("SCHEDULE_TOPIC_XXXX", {"UNIQ_KEY": "U1", "ORIGIN_MESSAGE_ID": "U1", "REAL_TOPIC": "%RETRY%g",
                                         "RETRY_TOPIC": "orders"}, recon=1, phys=100),
            _Rec("%RETRY%g", {"UNIQ_KEY": "U1", "ORIGIN_MESSAGE_ID": "U1", "REAL_TOPIC": "%RETRY%g"},
                 qoff=0, recon=1, phys=200)]
    if as_heads:
        recs = [_as_head(r) for r in recs]
    a = account(recs, {"orders@g": {"0": 1}, "%RETRY%g@g": {"0": 1}})
    assert a.summary() == {"produced": 1, "succeeded": 1, "dead_lettered": 0, "send_backs": 1}
    a = account(recs, {"orders@g": {"0": 1}})                # the retry copy not consumed yet
    assert a.summary() == {"produced": 1, "succeeded": 0, "dead_lettered": 0, "send_backs": 1}


def test_the_simulators_entry_point_on_an_open_store(scenario, tmp_path):
    import shutil

    from rocketmq_emulator.store.accounting import account_message_store
    from rocketmq_emulator.store import MessageStore, StoreConfig

    shutil.copytree(scenario.snap, tmp_path / "s")
    store = MessageStore(tmp_path / "s", StoreConfig(segment_size=12 << 10))
    try:
        assert account_message_store(store).to_dict() == account_store(scenario.snap).to_dict()
    finally:
        store.close()


def test_the_store_level_driver_stores_what_the_broker_core_stores(scenario, tmp_path):
    """The fallback driver (ScheduleService + a send-back written from the reference)
    and the real BrokerCore leave stores that account the same, with the same truth."""
    import sa_scenario

    truth = sa_scenario.run(tmp_path / "store", driver=sa_scenario.MiniBroker)
    # (the snapshot: the shared scenario's store was written on after it was taken)
    assert account_store(tmp_path / "store").to_dict() == account_store(scenario.snap).to_dict()
    assert truth.lateness == scenario.truth.lateness and dict(truth.succeeded) == dict(scenario.truth.succeeded)


@pytest.mark.parametrize("as_heads", [False, True], ids=["mappings", "heads"])
def test_an_orderly_dead_letter_is_not_also_a_success(as_heads):
    """An orderly consumer retries in place and, at maxReconsumeTimes, sends the message
    to %DLQ% itself; the committed offset then passes the original. Dead-lettered, so
    not succeeded: produced = succeeded + dead_lettered once everything settled."""
    recs = [_Rec("orders", {"UNIQ_KEY": "U1"}, qoff=0, phys=0),
            _Rec("orders", {"UNIQ_KEY": "U2"}, qoff=1, phys=100),
            _Rec("%DLQ%g", {"UNIQ_KEY": "U1", "ORIGIN_MESSAGE_ID": "ID0", "RETRY_TOPIC": "orders"}, recon=3,
                 phys=200)]
    if as_heads:
        recs = [_as_head(r) for r in recs]
    a = account(recs, {"orders@g": {"0": 2}})
    assert a.summary() == {"produced": 2, "succeeded": 1, "dead_lettered": 1, "send_backs": 1}


@pytest.mark.parametrize("as_heads", [False, True], ids=["mappings", "heads"])
def test_5x_pop_retry_copies_belong_to_their_group(as_heads):
    """5.x redeliveries are copies in %RETRY%<group>+<topic> (reconsumeTimes = the
    failed attempt + 1), the DLQ copy after the last one has reconsumeTimes one higher
    than 4.x's (the proxy's pop-time check). Group names with '_' stay unambiguous."""
    g, t = "pay_ments", "or_ders"
    retry = f"%RETRY%{g}+{t}"
    recs = [_Rec(t, {"UNIQ_KEY": "U1"}, qoff=0, phys=0),                 # fails twice, then dead
            _Rec(t, {"UNIQ_KEY": "U2"}, qoff=1, phys=100),               # fails once, then succeeds
            _Rec(retry, {"UNIQ_KEY": "U1", "ORIGIN_MESSAGE_ID": "ID0", "RETRY_TOPIC": t}, qoff=0, recon=1, phys=200),
            _Rec(retry, {"UNIQ_KEY": "U2", "ORIGIN_MESSAGE_ID": "ID100", "RETRY_TOPIC": t}, qoff=1, recon=1,
                 phys=300),
            _Rec(f"%DLQ%{g}", {"UNIQ_KEY": "U1", "ORIGIN_MESSAGE_ID": "ID0", "RETRY_TOPIC": t}, recon=3, phys=400)]
    if as_heads:
        recs = [_as_head(r) for r in recs]
    a = account(recs, {f"{t}@{g}": {"0": 2}, f"{retry}@{g}": {"0": 2}})
    assert a.summary() == {"produced": 2, "succeeded": 1, "dead_lettered": 1, "send_backs": 3}
    (per,) = a.per_group
    assert (per.group, per.topic, per.retried) == (g, t, {1: 2})


@pytest.mark.parametrize("as_heads", [False, True], ids=["mappings", "heads"])
def test_pulsar_dead_letters_belong_to_the_subscription_their_topic_names(as_heads):
    """A Pulsar client's dead letter is a copy in ``<topic>-<subscription>-DLQ`` (the
    clients' default) or ``<subscription>-DLQ`` (the older name), with REAL_TOPIC and
    ORIGIN_MESSAGE_ID in the store's terms (the front writes them so). The subscription
    acked the original after moving it: dead-lettered, not succeeded. Redeliveries are
    no records: their stats come from config/subscriptions.json."""
    t = "pulsar|public|default|orders"
    originals = [_Rec(t, {}, qoff=i, phys=100 * i) for i in range(3)]
    if as_heads:
        originals = [_as_head(r) for r in originals]
    first, second = originals[0].offset_msg_id, originals[1].offset_msg_id
    recs = originals + [
        _Rec(t + "-bill_ing-DLQ", {"REAL_TOPIC": t, "ORIGIN_MESSAGE_ID": first}, recon=3, phys=300),
        _Rec("pulsar|public|default|audit-DLQ", {"REAL_TOPIC": t, "ORIGIN_MESSAGE_ID": second}, recon=2, phys=400),
        _Rec("pulsar|public|default|plain-DLQ", {}, phys=500)]            # no copy: a topic's own message
    if as_heads:
        recs = recs[:3] + [_as_head(r) for r in recs[3:]]
    stats = {f"{t}@bill_ing": {"acked": [], "stats": {"redeliveries": 5, "redelivered_messages": 2,
                                                      "max_redelivery_count": 2}}}
    a = account(recs, {f"{t}@bill_ing": {"0": 3}, f"{t}@audit": {"0": 3}}, stats)
    per = {(g.group, g.topic): (g.produced, g.succeeded, g.dead_lettered, g.send_backs) for g in a.per_group}
    assert per == {("audit", t): (3, 2, 1, 1), ("bill_ing", t): (3, 2, 1, 1)}
    assert a.produced_by_topic == {t: 3, "pulsar|public|default|plain-DLQ": 1}
    assert a.to_dict()["redeliveries"] == [{"group": "bill_ing", "topic": t, "redeliveries": 5,
                                            "redelivered_messages": 2, "max_redelivery_count": 2}]
    assert classify(t + "-s-DLQ", {"REAL_TOPIC": t}) is Kind.DEAD_LETTER
    assert classify(t + "-s-DLQ", {"REAL_TOPIC": t + "-s-DLQ", "DELAY": "2"}) is Kind.DELAYED_DELIVERY
