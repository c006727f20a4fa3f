"""Search by timestamp (rocketmq-4x.md §2.6) and query by key (§2.10)."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emulator.store import MessageStore
from rocketmq_emulator.store.records import SysFlag, decode_record
from store_testkit import SMALL, rec


def store_with_times(times, root=None):
    s = MessageStore(root, SMALL)
    for i, t in enumerate(times):
        assert s.put(rec("T", f"m{i}".encode()), t).ok
    return s


@pytest.mark.parametrize("ts,offset", [
    (300, 3),      # exact
    (200, 2),      # exact, among equal times: the one the binary search probes first
    (250, 2),      # equally far from 200 and 300: the left one
    (260, 3),      # closer to the right
    (240, 2),      # closer to the left
    (400, 3),      # tie between 300 and 500: left
    (50, 0),       # before everything: only a right side
    (10_000, 4),   # after everything: only a left side
])
def test_offset_by_time_rule(ts, offset):
    s = store_with_times([100, 200, 200, 300, 500])
    assert s.offset_by_time("T", 0, ts) == offset


def test_offset_by_time_unknown_or_empty_queue_is_zero():
    s = store_with_times([100])
    assert s.offset_by_time("T", 1, 100) == 0 and s.offset_by_time("X", 0, 100) == 0
    assert s.offset_by_time("T", 0, 5) == 0 and s.offset_by_time("T", 0, 500) == 0


def _rule(times, ts):
    """The rule stated plainly, for sorted times: an exact time (any offset holding it),
    else the nearer of the neighbours around ts, the left on a tie."""
    if ts in times:
        return {i for i, t in enumerate(times) if t == ts}
    left = max((i for i, t in enumerate(times) if t < ts), default=None)
    right = min((i for i, t in enumerate(times) if t > ts), default=None)
    if left is None:
        return {right}
    if right is None:
        return {left}
    return {right} if ts - times[left] > times[right] - ts else {left}


@given(st.lists(st.integers(0, 60), min_size=1, max_size=40).map(sorted), st.integers(-5, 65))
def test_offset_by_time_matches_the_rule(times, ts):
    s = store_with_times(times)
    assert s.offset_by_time("T", 0, ts) in _rule(times, ts)


def test_offset_by_time_after_reopen(tmp_path):
    s = store_with_times([10, 20, 30, 40], tmp_path)
    s.close()
    with MessageStore(tmp_path, SMALL) as again:
        assert again.offset_by_time("T", 0, 26) == 2 and again.offset_by_time("T", 0, 25) == 1


def _bodies(raws):
    return [decode_record(r).body for r in raws]


def test_query_by_key_finds_keys_words_and_uniq_key():
    s = MessageStore(None, SMALL)
    s.put(rec("T", b"a", keys="order-1 customer-9", uniq="U1"), 100)
    s.put(rec("T", b"b", keys="order-2  customer-9 ", uniq="U2"), 200)    # extra spaces: empty words
    s.put(rec("Other", b"c", keys="order-1"), 300)
    s.put(rec("T", b"d"), 400)
    far = 1 << 62
    assert _bodies(s.query_by_key("T", "order-1", 32, 0, far)) == [b"a"]            # topic-scoped
    assert _bodies(s.query_by_key("T", "customer-9", 32, 0, far)) == [b"b", b"a"]   # newest first
    assert _bodies(s.query_by_key("T", "U2", 32, 0, far)) == [b"b"]
    assert _bodies(s.query_by_key("Other", "order-1", 32, 0, far)) == [b"c"]
    assert s.query_by_key("T", "", 32, 0, far) == []
    assert s.query_by_key("T", "nope", 32, 0, far) == []
    assert _bodies(s.query_by_key("T", "customer-9", 1, 0, far)) == [b"b"]         # max_num
    assert s.query_by_key("T", "customer-9", 0, 0, far) == []


def test_query_by_key_is_time_bounded_inclusive():
    s = MessageStore(None, SMALL)
    for t in (100, 200, 300):
        s.put(rec("T", str(t).encode(), keys="k"), t)
    assert _bodies(s.query_by_key("T", "k", 32, 200, 300)) == [b"300", b"200"]
    assert _bodies(s.query_by_key("T", "k", 32, 101, 199)) == []
    assert _bodies(s.query_by_key("T", "k", 32, 0, 100)) == [b"100"]


def test_query_by_key_sees_later_puts_and_survives_reopen(tmp_path):
    s = MessageStore(tmp_path, SMALL)
    s.put(rec("T", b"first", keys="k"), 1)
    assert _bodies(s.query_by_key("T", "k", 32, 0, 10)) == [b"first"]
    for i in range(60):                                  # roll over a few segments
        s.put(rec("T", f"more-{i}".encode(), keys="k" if i % 10 == 0 else "z"), 2)
    found = s.query_by_key("T", "k", 32, 0, 10)
    assert _bodies(found) == [f"more-{i}".encode() for i in (50, 40, 30, 20, 10, 0)] + [b"first"]
    assert all(raw == s.read(decode_record(raw).commit_log_offset) for raw in found)
    s.close()
    with MessageStore(tmp_path, SMALL) as again:
        assert again.query_by_key("T", "k", 32, 0, 10) == found


def test_rollback_halves_are_not_indexed():
    s = MessageStore(None, SMALL)
    r = rec("T", b"rolled back", keys="k")
    r.sys_flag = SysFlag.TRANSACTION_ROLLBACK
    s.put(r, 1)
    s.put(rec("T", b"kept", keys="k"), 2)
    assert _bodies(s.query_by_key("T", "k", 32, 0, 10)) == [b"kept"]
