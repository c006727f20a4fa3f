"""The 5.x pop model on the core (issue 19 item 1; reference rocketmq-5x-grpc.md §3.6–3.9,
§4): receive with an invisible time, ack, change invisible time, revive into the pop
retry topic with the attempt + 1, the DLQ after the group's maximum deliveries."""
import pytest

from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.rocketmq_model.groups import SubscriptionGroupConfig
from rocketmq_emulator.broker.operations import (AckOutcome, InvisibleOutcome, PopOutcome, PopRequest, SendOutcome,
                                                 SendRequest)
from rocketmq_emulator.broker.rocketmq_model.invisible_time import pop_retry_topic
from rocketmq_emulator.delay_scheduler import VirtualClock
from rocketmq_emulator.store.records import Prop

from tests.broker.wire import read_topic

G, T = "G5", "T5"


def broker(tmp_path=None, queues=1, retry_max_times=16):
    clock = VirtualClock()
    core = BrokerCore.open(tmp_path, clock) if tmp_path else BrokerCore.in_memory(clock)
    core.topics.create_system(T, queues, 6)
    core.groups.put(SubscriptionGroupConfig(G, retry_max_times=retry_max_times))
    return core


def send(core, body, tags=None, uniq=None):
    props = {Prop.UNIQ_KEY: uniq or body.decode()}
    if tags:
        props[Prop.TAGS] = tags
    res = core.send(SendRequest("P", T, body, queue_id=-1, properties=props), core.connect())
    assert res.outcome is SendOutcome.STORED


def pop(core, n=32, invisible_ms=30_000, tags=None):
    return core.pop(PopRequest(G, T, n, invisible_ms, tags))


def test_a_popped_message_is_invisible_until_acked_and_the_offset_follows_acks():
    core = broker(queues=1)
    for b in (b"a", b"b", b"c"):
        send(core, b)
    r = pop(core, n=2)
    assert r.outcome is PopOutcome.FOUND
    assert [(m.record.body, m.delivery_attempt, m.topic) for m in r.messages] == [(b"a", 1, T), (b"b", 1, T)]
    assert len({m.receipt_handle for m in r.messages}) == 2
    [c] = pop(core).messages                       # a and b are invisible: only c
    assert c.record.body == b"c"
    assert pop(core).outcome is PopOutcome.NO_NEW_MESSAGE
    assert core.ack(G, T, r.messages[1].receipt_handle) is AckOutcome.ACKED      # b: a still holds the offset
    assert core.store.query_offset(G, T, 0) == 0
    assert core.ack(G, T, r.messages[0].receipt_handle) is AckOutcome.ACKED
    assert core.store.query_offset(G, T, 0) == 2
    assert core.ack(G, T, r.messages[0].receipt_handle) is AckOutcome.INVALID_RECEIPT_HANDLE   # twice
    core._check()


def test_an_unacked_delivery_comes_back_after_its_invisible_time_with_the_attempt_plus_one():
    core = broker()
    send(core, b"m", uniq="ID-1")
    [first] = pop(core, invisible_ms=30_000).messages
    core.advance_clock(29_999)
    assert pop(core).outcome is PopOutcome.NO_NEW_MESSAGE
    core.advance_clock(1)
    [again] = pop(core).messages
    assert again.record.body == b"m" and again.delivery_attempt == 2 and again.topic == T
    assert again.record.properties[Prop.UNIQ_KEY] == "ID-1"          # message_id unchanged
    assert again.record.topic == pop_retry_topic(G, T) == "%RETRY%G5+T5"
    assert core.ack(G, T, first.receipt_handle) is AckOutcome.INVALID_RECEIPT_HANDLE   # that delivery is over
    assert core.ack(G, T, again.receipt_handle) is AckOutcome.ACKED
    core.advance_clock(3_600_000)
    assert pop(core).outcome is PopOutcome.NO_NEW_MESSAGE
    core._check()


def test_change_invisible_time_gives_a_new_handle_and_keeps_the_attempt():
    core = broker()
    send(core, b"m")
    [d] = pop(core, invisible_ms=10_000).messages
    core.advance_clock(5_000)
    changed = core.change_invisible_time(G, T, d.receipt_handle, 60_000)
    assert changed.outcome is InvisibleOutcome.CHANGED and changed.receipt_handle != d.receipt_handle
    assert core.ack(G, T, d.receipt_handle) is AckOutcome.INVALID_RECEIPT_HANDLE     # the old one is stale
    core.advance_clock(59_999)
    assert pop(core).outcome is PopOutcome.NO_NEW_MESSAGE
    core.advance_clock(1)
    [again] = pop(core).messages
    assert again.delivery_attempt == 2


def test_an_expired_handle_is_refused_with_the_reason():
    core = broker()
    send(core, b"m")
    [d] = pop(core, invisible_ms=10_000).messages
    core.clock.advance_to(core.clock.now_ms() + 10_000)          # expired, not yet revived by a tick
    assert core.ack(G, T, d.receipt_handle) is AckOutcome.EXPIRED
    r = core.change_invisible_time(G, T, d.receipt_handle, 1000)
    assert r.outcome is InvisibleOutcome.INVALID_RECEIPT_HANDLE and "expired" in r.remark
    assert core.ack(G, T, "not a handle") is AckOutcome.INVALID_RECEIPT_HANDLE


def test_after_the_groups_maximum_deliveries_the_message_goes_to_the_dlq():
    core = broker(retry_max_times=2)                 # 3 deliveries
    send(core, b"poison", uniq="P-1")
    attempts = []
    for _ in range(3):
        [d] = pop(core, invisible_ms=10_000).messages
        attempts.append(d.delivery_attempt)
        core.advance_clock(10_000)
    assert attempts == [1, 2, 3]
    assert pop(core).outcome is PopOutcome.NO_NEW_MESSAGE
    [dead] = read_topic(core, "%DLQ%G5")
    assert dead.body == b"poison" and dead.properties[Prop.UNIQ_KEY] == "P-1"
    assert dead.reconsume_times == 4 and dead.properties[Prop.RETRY_TOPIC] == T
    assert core.topics.get("%DLQ%G5").read_queue_nums == 1
    core._check()


def test_tags_filter_and_messages_not_subscribed_are_passed_over():
    core = broker()
    send(core, b"a", tags="TagA")
    send(core, b"b", tags="TagB")
    send(core, b"a2", tags="TagA")
    r = pop(core, tags=frozenset({"TagA"}))
    assert [m.record.body for m in r.messages] == [b"a", b"a2"]
    for m in r.messages:
        core.ack(G, T, m.receipt_handle)
    assert core.store.query_offset(G, T, 0) == 3


@pytest.mark.parametrize("req, outcome", [
    (PopRequest(G, T, 0), PopOutcome.ILLEGAL_ARGUMENT),
    (PopRequest(G, T, 33), PopOutcome.ILLEGAL_ARGUMENT),
    (PopRequest(G, T, 1, 12 * 3600 * 1000 + 1), PopOutcome.ILLEGAL_INVISIBLE_TIME),
    (PopRequest(G, "NoSuchTopic", 1), PopOutcome.TOPIC_NOT_EXIST),
])
def test_bad_pops_are_refused_and_change_nothing(req, outcome):
    core = broker()
    send(core, b"m")
    r = core.pop(req)
    assert r.outcome is outcome and r.remark and not r.messages
    assert [m.record.body for m in pop(core).messages] == [b"m"]


def test_a_restart_delivers_again_what_was_not_acked(tmp_path):
    core = broker(tmp_path, queues=1)
    for b in (b"a", b"b", b"c"):
        send(core, b)
    a, b, c = pop(core).messages
    core.ack(G, T, a.receipt_handle)
    core.ack(G, T, c.receipt_handle)
    core.close()
    again = BrokerCore.open(tmp_path, core.clock)
    assert [m.record.body for m in again.pops.pop(PopRequest(G, T)).messages] == [b"b", b"c"]   # from b's offset
    again.close()


def test_forward_to_the_dlq_moves_the_message_now_and_is_idempotent():
    core = broker()
    send(core, b"m", uniq="F-1")
    [d] = pop(core).messages
    assert core.forward_to_dlq(G, T, d.receipt_handle) is AckOutcome.ACKED
    assert core.forward_to_dlq(G, T, d.receipt_handle) is AckOutcome.ACKED          # again: still OK
    [dead] = read_topic(core, "%DLQ%G5")
    assert dead.properties[Prop.UNIQ_KEY] == "F-1"
    assert core.store.query_offset(G, T, 0) == 1
    core.advance_clock(3_600_000)
    assert pop(core).outcome is PopOutcome.NO_NEW_MESSAGE
    assert core.forward_to_dlq(G, T, "t 0 9 9 9") is AckOutcome.INVALID_RECEIPT_HANDLE


# -- FIFO groups (issue 20 item 4; reference §5) -------------------------------------------------
def fifo_broker(retry_max_times=2):
    core = broker(retry_max_times=retry_max_times)
    core.groups.put(SubscriptionGroupConfig(G, retry_max_times=retry_max_times, consume_message_orderly=True))
    return core


def send_group(core, body, group):
    res = core.send(SendRequest("P", T, body, queue_id=0, properties={Prop.UNIQ_KEY: body.decode(),
                                                                       "__SHARDINGKEY": group}), core.connect())
    assert res.outcome is SendOutcome.STORED


def fifo_pop(core, invisible_ms=10_000):
    return core.pop(PopRequest(G, T, 32, invisible_ms, None, True)).messages


def test_a_message_groups_next_message_waits_for_the_one_in_flight_other_groups_do_not():
    core = fifo_broker()
    for body, group in ((b"a0", "A"), (b"a1", "A"), (b"b0", "B"), (b"a2", "A"), (b"b1", "B")):
        send_group(core, body, group)
    first = fifo_pop(core)
    assert [m.record.body for m in first] == [b"a0", b"b0"]
    assert fifo_pop(core) == []
    core.ack(G, T, first[1].receipt_handle)                   # b0 done: b1 may go, A still waits
    assert [m.record.body for m in fifo_pop(core)] == [b"b1"]
    core.ack(G, T, first[0].receipt_handle)
    assert [m.record.body for m in fifo_pop(core)] == [b"a1"]
    assert core.store.query_offset(G, T, 0) == 1              # a1 in flight holds the offset
    core._check()


def test_a_failing_fifo_message_comes_back_in_place_blocks_its_group_then_goes_to_the_dlq():
    core = fifo_broker(retry_max_times=2)                     # 3 deliveries
    send_group(core, b"bad", "A")
    send_group(core, b"next", "A")
    send_group(core, b"other", "B")
    attempts = []
    for _ in range(3):
        msgs = fifo_pop(core)
        bad = [m for m in msgs if m.record.body == b"bad"]
        assert [m.record.body for m in msgs if m.record.body != b"other"] == [b"bad"]   # "next" waits
        attempts.append(bad[0].delivery_attempt)
        for m in msgs:
            if m.record.body == b"other":
                core.ack(G, T, m.receipt_handle)
        core.advance_clock(10_000)
    assert attempts == [1, 2, 3]
    [dead] = read_topic(core, "%DLQ%G5")
    assert dead.body == b"bad"
    assert [m.record.body for m in fifo_pop(core)] == [b"next"]
    assert core.store.max_offset(pop_retry_topic(G, T), 0) == 0   # never through the retry topic
    core._check()


def test_forwarding_a_fifo_message_to_the_dlq_unblocks_its_group():
    core = fifo_broker()
    send_group(core, b"given up", "A")
    send_group(core, b"after", "A")
    [m] = fifo_pop(core)
    assert core.forward_to_dlq(G, T, m.receipt_handle) is AckOutcome.ACKED
    assert [x.record.body for x in fifo_pop(core)] == [b"after"]
    assert [r.body for r in read_topic(core, "%DLQ%G5")] == [b"given up"]


# -- auto-renew (a 5.x PushConsumer's receive; reference §4.6, §4.7) ---------------------------
def pop_renewed(core, client="client-1"):
    return core.pop(PopRequest(G, T, 32, 60_000, renew_for=client))


def test_an_auto_renewed_delivery_stays_invisible_while_its_client_is_there_and_its_handle_stays_good():
    core = broker()
    send(core, b"slow")
    [d] = pop_renewed(core).messages
    core.advance_clock(2 * 3_600_000)                      # far past the 60 s it was popped for
    assert pop(core).outcome is PopOutcome.NO_NEW_MESSAGE
    core._check()
    assert core.ack(G, T, d.receipt_handle) is AckOutcome.ACKED     # the original handle, 2 h later
    assert core.store.query_offset(G, T, 0) == 1
    core._check()


def test_after_3_hours_of_renewal_it_is_nacked_with_the_retry_interval_of_its_attempt():
    core = broker()
    send(core, b"stuck")
    pop_renewed(core)
    core.advance_clock(3 * 3_600_000)                      # renewals end; nacked for 10 s (attempt 1)
    core._check()
    core.advance_clock(9_000)
    assert pop(core).outcome is PopOutcome.NO_NEW_MESSAGE
    core.advance_clock(1_000)
    [again] = pop(core).messages
    assert again.record.body == b"stuck" and again.delivery_attempt == 2


def test_a_client_that_goes_away_releases_its_renewed_deliveries_after_one_second():
    core = broker()
    for b in (b"a", b"b"):
        send(core, b)
    [a] = pop_renewed(core, "leaving").messages[:1]
    core.advance_clock(10 * 60_000)
    assert core.release_client("leaving") == 2
    assert core.release_client("leaving") == 0             # nothing held twice
    core.advance_clock(999)
    assert pop(core).outcome is PopOutcome.NO_NEW_MESSAGE
    core.advance_clock(1)
    got = pop(core).messages
    assert sorted((m.record.body, m.delivery_attempt) for m in got) == [(b"a", 2), (b"b", 2)]
    assert core.ack(G, T, a.receipt_handle) is AckOutcome.INVALID_RECEIPT_HANDLE
    core._check()


def test_release_leaves_other_clients_and_plain_deliveries_alone():
    core = broker()
    for b in (b"a", b"b", b"c"):
        send(core, b)
    core.pop(PopRequest(G, T, 1, 60_000, renew_for="one"))
    core.pop(PopRequest(G, T, 1, 60_000, renew_for="two"))
    [plain] = core.pop(PopRequest(G, T, 1, 300_000)).messages
    core.release_client("one")
    core.advance_clock(1_000)
    [released] = pop(core).messages                                       # only "one"'s
    assert released.record.body == b"a" and core.ack(G, T, released.receipt_handle) is AckOutcome.ACKED
    core.advance_clock(299_000)
    assert [m.record.body for m in pop(core).messages] == [plain.record.body]   # its own 5 min; "two" renewed
    core._check()


def test_a_change_of_invisible_time_ends_the_renewal():
    core = broker()
    send(core, b"m")
    [d] = pop_renewed(core).messages
    changed = core.change_invisible_time(G, T, d.receipt_handle, 5_000)
    assert changed.outcome is InvisibleOutcome.CHANGED
    core.release_client("client-1")                        # nothing renewed any more
    core.advance_clock(5_000)
    [again] = pop(core).messages
    assert again.delivery_attempt == 2
    core._check()


def test_in_a_fifo_group_messages_without_a_message_group_wait_for_none_and_hold_none_back():
    """Issue 42 item 5: only the message group of an un-acked message waits; a message
    without one (a normal or delay message read by a FIFO group) is its own group."""
    core = fifo_broker()

    def plain(body):                                    # queue 0 too, no __SHARDINGKEY
        res = core.send(SendRequest("P", T, body, queue_id=0, properties={Prop.UNIQ_KEY: body.decode()}),
                        core.connect())
        assert res.outcome is SendOutcome.STORED

    send_group(core, b"a0", "A")
    plain(b"plain-0")
    send_group(core, b"a1", "A")
    plain(b"plain-1")
    first = fifo_pop(core)
    assert [m.record.body for m in first] == [b"a0", b"plain-0", b"plain-1"]      # a1 waits for a0
    assert fifo_pop(core) == []
    core.advance_clock(10_000)                          # none acked: all come back, a1 still behind a0
    assert sorted(m.record.body for m in fifo_pop(core)) == [b"a0", b"plain-0", b"plain-1"]
    core._check()
