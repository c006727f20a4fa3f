"""Delay tables (checklist 62, 65), durations, the clocks and the scheduler."""
import pytest
from hypothesis import given, strategies as st

from rocketmq_emulator.store.config import DelayTableError
from tests.support.delay import DEFAULT_MESSAGE_DELAY_LEVEL, levels_of
from rocketmq_emulator.delay_scheduler import (DelayLevelError, DelayLevels, DelayScheduler,
                             SystemClock, VirtualClock, format_duration, parse_duration)


def test_62_default_table_has_18_levels():
    levels = levels_of(DEFAULT_MESSAGE_DELAY_LEVEL)
    assert DEFAULT_MESSAGE_DELAY_LEVEL == "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
    assert levels.delays_ms == (1000, 5000, 10000, 30000, 60000, 120000, 180000, 240000, 300000, 360000,
                                420000, 480000, 540000, 600000, 1200000, 1800000, 3600000, 7200000)
    assert levels.max_level == 18
    assert levels.as_config() == DEFAULT_MESSAGE_DELAY_LEVEL


def test_units_include_days():
    assert levels_of("1s 2m 3h 1d").delays_ms == (1000, 120000, 10800000, 86400000)


def test_65_deliver_timestamp_unknown_level_is_plus_1000():
    levels = levels_of("5s 8s")
    assert levels.deliver_timestamp(2, 0) == 8000
    assert levels.deliver_timestamp(999, 0) == 1000
    assert levels.queue_id(2) == 1 and levels.level_of_queue(2) == 3
    assert levels.clamp(40) == 2


@pytest.mark.parametrize("bad", ["", "  ", "1s 5x", "s", "10", "1.5s", "-1s"])
def test_bad_tables_raise(bad):
    with pytest.raises(DelayTableError, match="messageDelayLevel"):
        levels_of(bad)


def test_the_scheduler_refuses_an_empty_or_negative_table():
    for bad in ((), (1000, -1)):
        with pytest.raises(DelayLevelError):
            DelayLevels(bad)


def test_durations():
    assert parse_duration("500ms") == 500 and parse_duration("10s") == 10_000
    assert parse_duration("2h") == 7_200_000 and parse_duration("1h30m") == 5_400_000
    for bad in ("", "10", "ten seconds", "5 parsecs", "1h-3m"):
        with pytest.raises(DelayLevelError):
            parse_duration(bad)
    assert format_duration(7_200_000) == "2h" and format_duration(1500) == "1500ms"


@given(st.integers(min_value=1, max_value=10**9))
def test_format_then_parse_round_trips(ms):
    assert parse_duration(format_duration(ms)) == ms


def test_virtual_clock_moves_only_forward():
    c = VirtualClock(1000)
    assert c.advance(500) == 1500 and c.advance_to(1200) == 1500 and c.advance_to(2000) == 2000
    with pytest.raises(ValueError):
        c.advance(-1)
    assert c.is_virtual and not SystemClock.is_virtual
    assert SystemClock().now_ms() > 1_600_000_000_000


def test_scheduler_heads_deadline_and_delivery():
    s = DelayScheduler(levels_of("1s 5s"))
    s.add(2, 0, 5000)
    s.add(1, 0, 1000)
    s.add(1, 1, 1500)
    assert s.next_deadline() == 1000
    due = []
    for level, off, t in s.due(1500):
        due.append((level, off))
        s.delivered(level, off)
    assert due == [(1, 0), (1, 1)]
    assert s.offsets() == {1: 2, 2: 0} and s.next_deadline() == 5000


def test_scheduler_keeps_an_undelivered_head():
    s = DelayScheduler(levels_of("1s"))
    s.add(1, 0, 1000)
    assert list(s.due(2000)) == [(1, 0, 1000)]     # caller did not deliver: stops
    assert s.pending_count() == 1
    with pytest.raises(ValueError):
        s.delivered(1, 5)


@given(st.lists(st.tuples(st.integers(1, 3), st.integers(0, 10_000)), max_size=60), st.integers(0, 20_000))
def test_scheduler_delivers_exactly_the_due_entries_in_order(adds, extra):
    levels = levels_of("1s 2s 3s")
    s = DelayScheduler(levels)
    next_off = {1: 0, 2: 0, 3: 0}
    store_ms = 0
    entries = []
    for level, gap in adds:
        store_ms += gap
        due = levels.deliver_timestamp(level, store_ms)
        s.add(level, next_off[level], due)
        entries.append((due, level, next_off[level]))
        next_off[level] += 1
        s._check()
    now = store_ms + extra          # a store time never lies in the future
    expected = [e for e in entries if e[0] <= now]
    got = []
    for level, off, t in s.due(now):
        got.append((t, level, off))
        s.delivered(level, off)
        s._check()
    assert sorted(got) == sorted(expected)
    assert [g[0] for g in got] == sorted(g[0] for g in got)
    nd = s.next_deadline()
    assert nd is None or nd > now
