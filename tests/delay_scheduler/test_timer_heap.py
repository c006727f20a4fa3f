"""ascending: a heap's entries below a time, in order, without popping."""
import heapq

from hypothesis import given, strategies as st

from rocketmq_emulator.delay_scheduler import ascending


@given(st.lists(st.integers(0, 50), max_size=60), st.integers(0, 60))
def test_ascending_is_the_sorted_entries_below_the_limit_and_leaves_the_heap_alone(times, limit):
    heap: list = []
    for seq, t in enumerate(times):
        heapq.heappush(heap, (t, seq, f"item{seq}"))
    before = list(heap)
    assert list(ascending(heap, limit)) == sorted(e for e in heap if e[0] < limit)
    assert heap == before


def test_ascending_stops_as_soon_as_its_consumer_does():
    heap = [(t, t, None) for t in range(1000)]      # already a heap
    walk = ascending(heap, 10_000)
    assert [next(walk)[0] for _ in range(3)] == [0, 1, 2]
