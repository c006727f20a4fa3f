"""put / get_message and friends, in memory and on disk alike (rocketmq-4x.md §2.5, §2.6, §3.4)."""
from __future__ import annotations

import pytest

from rocketmq_emulator.store import GetStatus, MessageStore, PutResult, PutStatus, StoreConfig, StoreError
from rocketmq_emulator.store.records import MessageRecord, Prop, SysFlag, create_offset_msg_id, decode_record, tags_code
from store_testkit import SMALL, bodies, fill, rec


@pytest.fixture(params=["memory", "disk"])
def store(request, tmp_path):
    s = MessageStore(None if request.param == "memory" else tmp_path / "store", SMALL)
    yield s
    s.close()


def test_put_assigns_offsets_timestamp_and_msg_id(store):
    r1 = rec("T", b"one")
    res1 = store.put(r1, 1_000)
    res2 = store.put(rec("T", b"two"), 1_005)
    res3 = store.put(rec("T", b"other-queue", 1), 1_006)
    assert res1 == PutResult(PutStatus.PUT_OK, 0, 0, 1_000, r1.store_size,
                             create_offset_msg_id(("127.0.0.1", 10911), 0), None)
    assert (res2.queue_offset, res2.commit_log_offset) == (1, r1.store_size)
    assert res3.queue_offset == 0 and res3.commit_log_offset == res2.commit_log_offset + res2.store_size
    assert (r1.queue_offset, r1.commit_log_offset, r1.store_timestamp) == (0, 0, 1_000)
    stored = store.look_message_by_offset(res2.commit_log_offset)
    assert stored.body == b"two" and stored.store_timestamp == 1_005 and stored.queue_offset == 1
    assert stored.offset_msg_id == res2.msg_id
    assert store.commit_log_max_offset == res3.commit_log_offset + res3.store_size
    assert store.queues() == {"T": [0, 1]}


def test_get_message_returns_the_raw_records(store):
    fill(store, 5)
    res = store.get_message("T", 0, 1, 3)
    assert res.status is GetStatus.FOUND and res.next_begin_offset == 4
    assert (res.min_offset, res.max_offset) == (0, 5)
    assert [decode_record(r).body for r in res.records] == [b"body-1", b"body-2", b"body-3"]
    assert res.body == b"".join(res.records)
    for off, raw in zip(range(1, 4), res.records):
        phys, size, _ = store.queue_entry("T", 0, off)
        assert raw == store.read(phys) and len(raw) == size


def test_36_max_and_min_offset(store):
    assert store.max_offset("T", 0) == 0 and store.min_offset("T", 0) == 0     # unknown queue
    fill(store, 7)
    assert store.max_offset("T", 0) == 7          # the next offset to be written
    assert store.min_offset("T", 0) == 0          # the first retained


def test_25_pull_at_max_offset_is_overflow_one(store):
    fill(store, 3)
    res = store.get_message("T", 0, 3, 32)
    assert res.status is GetStatus.OFFSET_OVERFLOW_ONE and res.next_begin_offset == 3 and res.records == []


def test_26_pull_beyond_max_offset_is_overflow_badly(store):
    fill(store, 3)
    res = store.get_message("T", 0, 10, 32)
    assert res.status is GetStatus.OFFSET_OVERFLOW_BADLY and res.next_begin_offset == 3


def test_28_unknown_queue_is_no_matched_logic_queue(store):
    fill(store, 1)
    for off in (0, 5):
        res = store.get_message("T", 3, off, 32)
        assert res.status is GetStatus.NO_MATCHED_LOGIC_QUEUE and res.next_begin_offset == 0
        assert (res.min_offset, res.max_offset) == (0, 0)


def test_29_everything_filtered_is_no_matched_message(store):
    for i in range(4):
        assert store.put(rec("T", b"b", tags="TagB"), i).ok
    store.put(rec("T", b"a", tags="TagA"), 9)
    res = store.get_message("T", 0, 0, 32, {tags_code("TagC")})
    assert res.status is GetStatus.NO_MATCHED_MESSAGE and res.next_begin_offset == 5 and not res.records
    res = store.get_message("T", 0, 0, 32, {tags_code("TagA")})
    assert res.status is GetStatus.FOUND and res.next_begin_offset == 5
    assert [decode_record(r).body for r in res.records] == [b"a"]
    res = store.get_message("T", 0, 0, 2, {tags_code("TagB")})
    assert res.next_begin_offset == 2 and len(res.records) == 2     # stops at max_msgs, not after


def test_filtering_scans_a_bounded_window(store):
    for i in range(900):
        store.put(rec("T", b"", tags="TagB"), i)
    res = store.get_message("T", 0, 0, 32, {tags_code("TagA")})
    assert res.status is GetStatus.NO_MATCHED_MESSAGE and res.next_begin_offset == 800


def test_transfer_caps(tmp_path):
    s = MessageStore(None, StoreConfig(max_transfer_count=4, max_transfer_bytes=1100))
    for i in range(10):
        s.put(rec("T", bytes(150)), i)                              # 263-byte records (20: the CRC property)
    res = s.get_message("T", 0, 0, 32)
    assert len(res.records) == 4 and res.next_begin_offset == 4
    s2 = MessageStore(None, StoreConfig(max_transfer_bytes=300))
    for i in range(3):
        s2.put(rec("T", bytes(1000)), i)
    res = s2.get_message("T", 0, 0, 32)
    assert len(res.records) == 1 and res.next_begin_offset == 1    # the first one always fits


def test_49_queue_entry_holds_tags_hash(store):
    res = store.put(rec("T", b"x", tags="TagA"), 5)
    assert store.queue_entry("T", 0, 0) == (res.commit_log_offset, res.store_size, 2598919)
    store.put(rec("T", b"x"), 6)
    assert store.queue_entry("T", 0, 1)[2] == 0
    assert store.queue_entry("T", 0, 2) is None and store.queue_entry("X", 0, 0) is None


def test_tags_code_follows_the_stored_properties_string(store):
    """The broker may store a properties string that differs from the map; the entry
    follows the string, so a queue rebuilt from the log is the same."""
    r = rec("T", b"x", tags="MapTag")
    r.properties_text = "TAGS\u0001StoredTag\u0002KEYS\u0001k"
    store.put(r, 1)
    assert store.queue_entry("T", 0, 0)[2] == tags_code("StoredTag")


@pytest.mark.parametrize("delay,expected", [("1", 1_000), ("2", 5_000), ("18", 7_200_000),
                                            ("99", 7_200_000),     # clamped to the table
                                            ("0", 1_000), ("-3", 1_000), ("x", 1_000), (None, 1_000)])
def test_65_schedule_topic_tags_code_is_the_delivery_time(store, delay, expected):
    props = {Prop.REAL_TOPIC: "T", Prop.REAL_QID: "0"}
    if delay is not None:
        props[Prop.DELAY] = delay
    r = MessageRecord(topic="SCHEDULE_TOPIC_XXXX", body=b"later", queue_id=1, properties=props)
    res = store.put(r, 50_000)
    assert store.queue_entry("SCHEDULE_TOPIC_XXXX", 1, 0)[2] == res.store_timestamp + expected


def test_schedule_tags_code_uses_the_configured_levels():
    s = MessageStore(None, StoreConfig(delay_levels_ms=(5_000, 8_000)))
    s.put(MessageRecord(topic="SCHEDULE_TOPIC_XXXX", queue_id=1, properties={Prop.DELAY: "2"}), 100)
    assert s.queue_entry("SCHEDULE_TOPIC_XXXX", 1, 0)[2] == 8_100


@pytest.mark.parametrize("tx", [SysFlag.TRANSACTION_PREPARED, SysFlag.TRANSACTION_ROLLBACK])
def test_prepared_and_rollback_halves_are_logged_but_not_queued(store, tx):
    fill(store, 2)
    r = rec("T", b"half")
    r.sys_flag = tx
    res = store.put(r, 10)
    assert res.ok and res.queue_offset == 0
    assert store.max_offset("T", 0) == 2
    assert store.look_message_by_offset(res.commit_log_offset).body == b"half"
    commit = rec("T", b"commit")
    commit.sys_flag = SysFlag.TRANSACTION_COMMIT
    assert store.put(commit, 11).queue_offset == 2
    store._check()


# -- bad input (checklist 44): a status, nothing stored, earlier messages intact --------
def _assert_nothing_stored(store, before_max, n_before):
    assert store.commit_log_max_offset == before_max
    assert bodies(store, "T", 0) == [f"body-{i}".encode() for i in range(n_before)]
    store._check()


@pytest.mark.parametrize("make,status", [
    (lambda: rec("t" * 128), PutStatus.MESSAGE_ILLEGAL),
    (lambda: rec("T", **{"k": "v" * 32767}), PutStatus.PROPERTIES_SIZE_EXCEEDED),
    (lambda: rec("T", bytes(SMALL.max_message_size + 1)), PutStatus.MESSAGE_ILLEGAL),
    (lambda: rec("T", bytes(5000)), PutStatus.MESSAGE_ILLEGAL),     # cannot fit a 4096-byte segment
    (lambda: rec("", b"x"), PutStatus.MESSAGE_ILLEGAL),
    (lambda: rec("a/b", b"x"), PutStatus.MESSAGE_ILLEGAL),
    (lambda: rec("..", b"x"), PutStatus.MESSAGE_ILLEGAL),
    (lambda: rec("T", b"x", queue_id=-1), PutStatus.MESSAGE_ILLEGAL),
    (lambda: MessageRecord(topic="T", body=None), PutStatus.MESSAGE_ILLEGAL),
    (lambda: MessageRecord(topic="T", body="text, not bytes"), PutStatus.MESSAGE_ILLEGAL),
    (lambda: MessageRecord(topic="T", body=b"x", born_host=("not-an-ip", 1)), PutStatus.MESSAGE_ILLEGAL),
    (lambda: MessageRecord(topic="T", body=b"x", flag=1 << 40), PutStatus.MESSAGE_ILLEGAL),
    (lambda: MessageRecord(topic=["T"], body=b"x"), PutStatus.MESSAGE_ILLEGAL),
    (lambda: MessageRecord(topic="T", body=b"x", queue_id="0"), PutStatus.MESSAGE_ILLEGAL),
    (lambda: MessageRecord(topic="T", body=b"x", born_host=None), PutStatus.MESSAGE_ILLEGAL),
])
def test_44_bad_input_is_a_status_and_stores_nothing(store, make, status):
    fill(store, 3)
    before = store.commit_log_max_offset
    bad = make()
    saved = (bad.queue_offset, bad.commit_log_offset, bad.store_timestamp, bad.properties_text)
    res = store.put(bad, 99)
    assert res.status is status and not res.ok and res.remark
    assert (res.commit_log_offset, res.queue_offset, res.msg_id) == (-1, -1, "")
    assert (bad.queue_offset, bad.commit_log_offset, bad.store_timestamp, bad.properties_text) == saved
    _assert_nothing_stored(store, before, 3)
    assert store.put(rec("T", b"body-3"), 100).ok                  # and the store carries on
    assert bodies(store, "T", 0)[-1] == b"body-3"


def test_a_store_host_given_as_a_list_still_gets_its_msg_id(store):
    r = MessageRecord(topic="T", body=b"x", store_host=["127.0.0.1", 9103])
    assert store.put(r, 1).msg_id == create_offset_msg_id(("127.0.0.1", 9103), 0)


def test_44_limits_are_inclusive(store):
    assert store.put(rec("t" * 127, b"x"), 1).ok
    big = MessageStore(None)
    assert big.put(rec("T", **{"k": "v" * (32767 - 2)}), 2).ok       # "k\x01" + value = 32767 bytes


def test_body_limit_uses_max_message_size():
    s = MessageStore(None, StoreConfig(max_message_size=10))
    assert s.put(rec("T", bytes(10)), 1).ok
    res = s.put(rec("T", bytes(11)), 2)
    assert res.status is PutStatus.MESSAGE_ILLEGAL and "11" in res.remark


def test_read_and_look_message_by_offset(store):
    res = fill(store, 3)
    for r in res:
        raw = store.read(r.commit_log_offset)
        assert raw is not None and len(raw) == r.store_size
    assert store.read(res[1].commit_log_offset + 1) is None      # not the start of a record
    assert store.read(store.commit_log_max_offset) is None
    assert store.read(-5) is None and store.read(1 << 50) is None
    assert store.look_message_by_offset(res[2].commit_log_offset).body == b"body-2"
    assert store.look_message_by_offset(7) is None


def test_34_query_offset_is_minus_one_until_committed_and_commits_may_go_back(store):
    fill(store, 3)
    assert store.query_offset("G", "T", 0) == -1
    assert store.min_offset("T", 0) == 0          # offset 0 is resident: the broker answers 0
    store.commit_offset("G", "T", 0, 2)
    store.commit_offset("G", "T", 1, 7)
    store.commit_offset("G2", "T", 0, 1)
    assert store.query_offset("G", "T", 0) == 2
    store.commit_offset("G", "T", 0, 1)           # 4.x stores it even when it goes backwards
    assert store.query_offset("G", "T", 0) == 1
    assert store.offset_table() == {"T@G": {0: 1, 1: 7}, "T@G2": {0: 1}}
    table = store.offset_table()
    table["T@G"][0] = 99                          # a copy
    assert store.query_offset("G", "T", 0) == 1


def test_68_delay_offsets_round_trip(store):
    assert store.delay_offsets() == {}
    store.set_delay_offsets({1: 0, 3: 7})
    assert store.delay_offsets() == {1: 0, 3: 7}
    store.set_delay_offsets({2: 5})               # replaces the table
    assert store.delay_offsets() == {2: 5}


def test_config_documents(store):
    assert store.load_config("topics") is None
    doc = {"topicConfigTable": {"T": {"readQueueNums": 4}}}
    store.save_config("topics", doc)
    got = store.load_config("topics")
    assert got == doc and got is not doc
    with pytest.raises(ValueError):
        store.save_config("consumerOffset", {})
    with pytest.raises(ValueError):
        store.save_config("../x", {})
    with pytest.raises(TypeError):
        store.save_config("bad", {"x": object()})


def test_a_closed_store(store):
    fill(store, 1)
    store.close()
    store.close()                                  # idempotent
    res = store.put(rec(), 1)
    assert res.status is PutStatus.SERVICE_NOT_AVAILABLE
    with pytest.raises(StoreError, match="closed"):
        store.get_message("T", 0, 0, 1)
    with pytest.raises(StoreError):
        store.flush()


def test_store_config_validation():
    with pytest.raises(ValueError):
        StoreConfig(flush_disk_type="SOMETIMES")
    with pytest.raises(ValueError):
        StoreConfig(segment_size=64)
    assert StoreConfig(delay_levels_ms=[1, 2]).delay_levels_ms == (1, 2)


def test_heads_walks_the_whole_log_in_order(store):
    """store.heads(): one head per record, in log order, across segment rolls (BLANKs
    skipped), flushed and pending bytes alike, transaction halves included."""
    from rocketmq_emulator.store.record_view import head

    results = fill(store, 40, queues=3)
    store.flush()                                       # some records in files, some pending
    half = rec("T", b"half")
    half.sys_flag = SysFlag.TRANSACTION_PREPARED
    results.append(store.put(half, 50))
    results += fill(store, 40, topic="U", start_ms=60)
    heads = list(store.heads())
    assert len({r.commit_log_offset // SMALL.segment_size for r in results}) > 1     # the log rolled
    assert [h.commit_log_offset for h in heads] == [r.commit_log_offset for r in results]
    assert heads == [head(store.read(r.commit_log_offset)) for r in results]
    assert heads[40].sys_flag & SysFlag.TRANSACTION_PREPARED and heads[40].queue_offset == 0
    assert [h.offset_msg_id for h in heads] == [r.msg_id for r in results]


def test_heads_of_a_closed_store_is_an_error(tmp_path):
    s = MessageStore(tmp_path / "s", SMALL)
    s.close()
    with pytest.raises(StoreError):
        s.heads()


def test_record_at_is_the_record_a_queue_lists_at_an_offset(store):
    """The one way from a queue offset to its record: the entry's record decoded, None
    outside the queue's [min, max), for an unknown queue and for an unlisted half."""
    fill(store, 3)
    half = rec("T", b"half")
    half.sys_flag = SysFlag.TRANSACTION_PREPARED
    store.put(half, 2_000)                          # stored, listed nowhere
    for off in range(3):
        got = store.record_at("T", 0, off)
        assert got.body == b"body-%d" % off and got.queue_offset == off
        assert got == store.look_message_by_offset(store.queue_entry("T", 0, off)[0])
    assert store.record_at("T", 0, 3) is None and store.record_at("T", 0, -1) is None
    assert store.record_at("T", 5, 0) is None and store.record_at("nope", 0, 0) is None


@pytest.mark.parametrize("sys_flag", [0, SysFlag.TRANSACTION_PREPARED, SysFlag.TRANSACTION_COMMIT,
                                      SysFlag.TRANSACTION_ROLLBACK])
def test_the_put_lists_a_record_as_the_dispatch_rule_says(store, sys_flag):
    """The live put asks store/dispatch.py: listed exactly when dispatch() gives an entry,
    and that entry is the one the queue holds (so recovery rebuilds the same queue)."""
    from rocketmq_emulator.store.dispatch import dispatch

    r = rec("T", b"x", tags="A")
    r.sys_flag = sys_flag
    res = store.put(r, 1_000)
    d = dispatch(r.topic, r.queue_id, r.sys_flag, r.properties_text, r.store_timestamp, res.commit_log_offset,
                 r.store_size, store.config.delay_levels_ms)
    if d is None:
        assert store.max_offset("T", 0) == 0 and res.queue_offset == 0
    else:
        assert d[0] == ("T", 0) and store.queue_entry("T", 0, res.queue_offset) == d[1]
    store._check()


@pytest.mark.parametrize("props", [{}, {"TAGS": "A"}, {"TAGS": "A", "KEYS": "k1 k2", "__CRC32#": "0000000001"}])
@pytest.mark.parametrize("prop_crc", [True, False])
def test_complete_stored_map_is_what_parsing_the_stored_string_gives(tmp_path, props, prop_crc):
    """The core's quick way to a copy's map as stored (MessageRecord.complete_stored_map,
    no parse) equals parsing the string the store wrote, CRC property on or off."""
    from rocketmq_emulator.store.records import string_to_properties

    store = MessageStore(None, StoreConfig(prop_crc=prop_crc))
    r = rec("T", b"x")
    r.properties = dict(props)
    assert store.put(r, 1_000).status is PutStatus.PUT_OK
    assert r.complete_stored_map() is r.properties
    assert r.properties == string_to_properties(r.properties_text)
    assert r.properties == store.look_message_by_offset(r.commit_log_offset).properties
