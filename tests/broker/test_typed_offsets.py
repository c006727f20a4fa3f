"""The core's typed offset operations, called without any 4.x header (the wire replies
are held by tests/broker/test_offsets_and_queries.py)."""
from rocketmq_emulator.broker.operations import CommitOutcome, OffsetCommit

from .wire import WireClient


def test_commit_and_resume(core):
    c = WireClient(core)
    c.send("T", b"a")
    c.send("T", b"b")
    assert c.heartbeat("G", ["T"]).code == 0
    assert core.committed_offset("G", "T", 0) == 0               # nothing stored, offset 0 still held
    assert core.commit_offset(OffsetCommit("G", "T", 0, 2)) is CommitOutcome.COMMITTED
    assert core.committed_offset("G", "T", 0) == 2
    assert core.commit_offset(OffsetCommit("G", "Nope", 0, 1)) is CommitOutcome.TOPIC_NOT_EXIST
    assert core.commit_offset(OffsetCommit("Unknown", "T", 0, 1)) is CommitOutcome.GROUP_NOT_EXIST
    assert core.committed_offset("Unknown", "T", 0) == 0
    assert core.queue_bounds("T", 0) == (0, 2) and core.queue_bounds("Nope", 0) == (0, 0)
    first = core.earliest_store_time("T", 0)
    assert first == core.clock.now_ms() and core.earliest_store_time("Nope", 0) == -1
    assert core.offset_at_time("T", 0, first) == 0
