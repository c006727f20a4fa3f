"""ProcessQueue: the minimum-offset commit rule (checklist 69-71) and the orderly maps,
with upstream's ProcessQueueTest numbers and a hypothesis state machine against a
tiny model, ``_check()`` after every step."""
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from rocketmq_emulator.client_sdk.message import MessageExt
from rocketmq_emulator.client_sdk.offset_store import _OffsetTable
from rocketmq_emulator.client_sdk.process_queue import ProcessQueue
from rocketmq_emulator.store.records import MessageRecord


def msg(offset, size=123, max_offset=None):
    props = {} if max_offset is None else {"MAX_OFFSET": str(max_offset)}
    return MessageExt.adopt(MessageRecord("T", b"x" * size, queue_offset=offset, properties=props))


def test_remove_returns_minus_one_when_empty_first_key_or_max_plus_one():  # checklist 69
    pq = ProcessQueue()
    assert pq.remove_messages([msg(0)]) == -1
    ms = [msg(i) for i in range(5)]
    pq.put_messages(ms)
    assert pq.remove_messages([ms[3]]) == 0          # 0 still in flight
    assert pq.remove_messages([ms[0]]) == 1
    assert pq.remove_messages([ms[1], ms[2], ms[4]]) == 5   # empty: queueOffsetMax + 1
    assert pq.remove_messages([ms[4]]) == -1
    pq._check()


def test_put_counts_only_new_offsets_and_dispatches_once():  # checklist 70
    pq = ProcessQueue()
    assert pq.put_messages([msg(0), msg(1)]) is True
    assert pq.put_messages([msg(1), msg(2)]) is False     # already consuming
    assert pq.msg_count == 3 and pq.msg_size == 3 * 123
    assert pq.queue_offset_max == 2
    pq._check()


def test_msg_acc_cnt_from_max_offset():
    pq = ProcessQueue()
    pq.put_messages([msg(0), msg(1, max_offset=10)])
    assert pq.msg_acc_cnt == 9


def test_upstream_process_queue_numbers():
    # ProcessQueueTest: 100 messages of 123 bytes; take 10 + commit; remove the last.
    pq = ProcessQueue()
    ms = [msg(i) for i in range(100)]
    pq.put_messages(ms)
    assert (pq.msg_count, pq.msg_size) == (100, 12300)
    taken = pq.take_messages(10)
    assert [m.queue_offset for m in taken] == list(range(10))
    assert pq.commit() == 10
    assert (pq.msg_count, pq.msg_size) == (90, 11070)
    pq.remove_messages([ms[-1]])
    assert (pq.msg_count, pq.msg_size) == (89, 10947)
    pq._check()


def test_orderly_take_again_rollback_and_stop():
    pq = ProcessQueue()
    pq.put_messages([msg(i) for i in range(3)])
    first = pq.take_messages(2)
    pq.make_message_to_consume_again(first)
    assert [m.queue_offset for m in pq.take_messages(1)] == [0]
    pq.rollback()
    assert list(pq.msg_tree) == [0, 1, 2] and not pq.consuming_tree
    assert len(pq.take_messages(5)) == 3 and pq.commit() == 3
    assert pq.take_messages(1) == [] and pq.consuming is False
    assert pq.commit() == -1
    pq._check()


def test_out_of_order_ack_never_passes_an_unacked_message():  # checklist 71
    store = _OffsetTable()
    pq = ProcessQueue()
    ms = [msg(i) for i in range(10)]
    pq.put_messages(ms)
    for i in (9, 8, 5, 7, 1, 2):
        store.update("mq", pq.remove_messages([ms[i]]), True)
    assert store.table["mq"] == 0
    store.update("mq", pq.remove_messages([ms[0]]), True)
    assert store.table["mq"] == 3
    store.update("mq", 1, True)                       # increase-only: 3 -> 1 refused
    assert store.table["mq"] == 3


class ProcessQueueMachine(RuleBasedStateMachine):
    """Pulls put increasing batches (with re-pulled duplicates); acks settle any subset
    in any order; the increase-only committed offset must equal the model's lowest
    unsettled offset and never pass one."""

    def __init__(self):
        super().__init__()
        self.pq = ProcessQueue()
        self.next = 0
        self.live: dict[int, MessageExt] = {}
        self.max_put = -1
        self.offsets = _OffsetTable()

    @rule(n=st.integers(1, 6), dup=st.booleans())
    def pull(self, n, dup):
        # a pull offset only grows; a duplicate is an offset still in flight pulled again
        start = self.next - 1 if dup and (self.next - 1) in self.live else self.next
        batch = [self.live.get(o) or msg(o, size=o % 7 + 1) for o in range(start, self.next + n)]
        was_consuming = self.pq.consuming
        dispatch = self.pq.put_messages(batch)
        assert dispatch == (not was_consuming)
        for m in batch:
            self.live[m.queue_offset] = m
        self.next += n
        self.max_put = self.next - 1

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def ack(self, data):
        keys = sorted(self.live)
        chosen = data.draw(st.lists(st.sampled_from(keys), min_size=1, max_size=4, unique=True))
        was_empty = not self.pq.msg_tree
        result = self.pq.remove_messages([self.live[k] for k in chosen])
        for k in chosen:
            del self.live[k]
        if was_empty:
            assert result == -1
        elif self.live:
            assert result == min(self.live)
        else:
            assert result == self.max_put + 1
        if result >= 0:
            self.offsets.update("mq", result, True)

    @rule()
    def ack_nothing_twice(self):
        # acking an already settled message changes nothing
        before = (self.pq.msg_count, self.pq.msg_size)
        self.pq.remove_messages([msg(self.next + 100)])
        assert (self.pq.msg_count, self.pq.msg_size) == before

    @invariant()
    def consistent(self):
        self.pq._check()
        assert set(self.pq.msg_tree) == set(self.live)
        committed = self.offsets.table.get("mq")
        if committed is not None and self.live:
            assert committed <= min(self.live), "committed offset passed an unacked message"


TestProcessQueueMachine = ProcessQueueMachine.TestCase


class OrderlyMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.pq = ProcessQueue()
        self.next = 0
        self.committed = 0

    @rule(n=st.integers(1, 5))
    def pull(self, n):
        self.pq.put_messages([msg(o) for o in range(self.next, self.next + n)])
        self.next += n

    @precondition(lambda self: not self.pq.consuming_tree)
    @rule(k=st.integers(1, 4))
    def take(self, k):
        expect = list(self.pq.msg_tree)[:k]
        assert [m.queue_offset for m in self.pq.take_messages(k)] == expect

    @precondition(lambda self: self.pq.consuming_tree)
    @rule(how=st.sampled_from(["commit", "again", "rollback"]))
    def settle(self, how):
        taken = list(self.pq.consuming_tree.values())
        if how == "commit":
            off = self.pq.commit()
            assert off == taken[-1].queue_offset + 1 and off > self.committed
            self.committed = off
        elif how == "again":
            self.pq.make_message_to_consume_again(taken)
        else:
            self.pq.rollback()

    @invariant()
    def consistent(self):
        self.pq._check()
        # in queue order: nothing below the committed offset is still around
        for off in list(self.pq.msg_tree) + list(self.pq.consuming_tree):
            assert off >= self.committed


TestOrderlyMachine = OrderlyMachine.TestCase
