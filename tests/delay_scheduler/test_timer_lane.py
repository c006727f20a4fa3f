"""The scheduler's timer lane: entries due at arbitrary times, in any offset order,
delivered earliest first, with a progress (floor + delivered above it) that a reopen
can resume from without delivering anything twice."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emulator.delay_scheduler import TIMER_LANE, DelayScheduler
from tests.support.delay import levels_of


def test_timer_entries_come_out_by_time_and_the_floor_follows_the_offsets():
    s = DelayScheduler(levels_of("1s"))
    for off, t in enumerate((5000, 1000, 3000)):
        s.add(TIMER_LANE, off, t)
    s.add(1, 0, 2000)
    assert s.next_deadline() == 1000
    got = []
    for lane, off, t in s.due(3000):
        got.append((lane, off, t))
        s.delivered(lane, off)
    assert got == [(TIMER_LANE, 1, 1000), (1, 0, 2000), (TIMER_LANE, 2, 3000)]
    assert s.timer_progress() == (0, (1, 2))         # offset 0 (due at 5000) still pending
    s._check()
    [(lane, off, t)] = list(s.due(5000))
    s.delivered(lane, off)
    assert s.timer_progress() == (3, ()) and s.pending_count() == 0


def test_an_undelivered_timer_head_stays_and_a_wrong_delivery_is_refused():
    s = DelayScheduler(levels_of("1s"))
    s.add(TIMER_LANE, 0, 1000)
    s.add(TIMER_LANE, 1, 500)
    assert list(s.due(2000)) == [(TIMER_LANE, 1, 500)]     # the caller did not deliver it: stops
    with pytest.raises(ValueError, match="not the earliest"):
        s.delivered(TIMER_LANE, 0)


def test_restored_progress_skips_what_was_delivered():
    s = DelayScheduler(levels_of("1s"))
    s.set_timer_progress(2, [4, 1])          # 1 lies below the floor: dropped
    for off in range(6):
        s.add(TIMER_LANE, off, 100 * off)
    assert [off for _, off, _ in _drain(s, 10_000)] == [2, 3, 5]
    assert s.timer_progress() == (6, ())


def _drain(s, now):
    out = []
    for lane, off, t in s.due(now):
        out.append((lane, off, t))
        s.delivered(lane, off)
    return out


@given(st.lists(st.integers(0, 50_000), max_size=40), st.lists(st.integers(0, 60_000), max_size=6),
       st.integers(0, 40))
def test_every_timer_entry_is_delivered_once_across_a_reopen(times, stops, reopen_after):
    """Deliver in steps, "reopen" (a new scheduler from the saved progress, re-fed the
    whole queue) at some step, and deliver the rest: each entry once, never early."""
    levels = levels_of("1s")
    s = DelayScheduler(levels)
    for off, t in enumerate(times):
        s.add(TIMER_LANE, off, t)
    delivered = []
    for i, now in enumerate(sorted(stops) + [60_000]):
        if i == reopen_after % (len(stops) + 1):
            floor, done = s.timer_progress()
            s = DelayScheduler(levels)
            s.set_timer_progress(floor, done)
            for off, t in enumerate(times):
                s.add(TIMER_LANE, off, t)
        for _, off, t in _drain(s, now):
            assert t <= now
            delivered.append(off)
        s._check()
    assert sorted(delivered) == list(range(len(times)))
