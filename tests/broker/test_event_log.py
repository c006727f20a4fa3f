"""The event record's bound: a ring of the newest events, its size changeable while it runs."""
import pytest

from rocketmq_emulator.broker.events import EventKind


def test_a_capacity_keeps_only_the_newest_events(core, client):
    core.events.capacity = 3
    for i in range(5):
        client.send("Ring", f"m{i}".encode())
    assert [e.queue_offset for e in core.events] == [2, 3, 4]
    core.events.capacity = 2                          # shrinking keeps the newest
    assert [e.queue_offset for e in core.events] == [3, 4]
    core.events.capacity = None                       # unbounded again, nothing lost since
    for i in range(3):
        client.send("Ring", b"more")
    assert [e.queue_offset for e in core.events.of_kind(EventKind.STORED)] == [3, 4, 5, 6, 7]


def test_a_capacity_of_zero_keeps_nothing_but_subscribers_still_hear(core, client):
    heard = []
    core.events.subscribe(heard.append, kinds=[EventKind.STORED])
    core.events.capacity = 0
    client.send("Ring", b"x")
    assert len(core.events) == 0 and [e.kind for e in heard] == [EventKind.STORED]


@pytest.mark.parametrize("bad", [-1, 1.5, "10", True])
def test_a_capacity_must_be_a_count(core, bad):
    with pytest.raises(ValueError, match="capacity"):
        core.events.capacity = bad
