"""Fault rules on the Pulsar front, frame by frame (issue 38): every operation and action
in raw frames, without a client (what the real client makes of them:
test_faults_pulsar.py). The virtual clock brings what a rule delays; the store stays the
truth."""
from __future__ import annotations

import pytest

pytest.importorskip("google_crc32c", reason="needs the pulsar extra: ./dev test installs it")

from rocketmq_emulator.broker.faults.door import outcome_of
from rocketmq_emulator.broker.faults.rules import Action, Operation, rule_from
from rocketmq_emulator.broker.fronts.pulsar import schema as s  # noqa: E402
from rocketmq_emulator.broker.fronts.pulsar.fault_answers import refusal_code  # noqa: E402
from rocketmq_emulator.broker.fronts.pulsar.front import Connection  # noqa: E402
from tests.broker.fronts.pulsar.raw import call, command, connected, producer, pushed, send  # noqa: E402

TOPIC = "persistent://public/default/orders"
STORED = "pulsar|public|default|orders"
SUB = "billing"


def add(front, operation, action, **fields):
    return front.core.faults.add(rule_from(operation, action, **fields))


def subscribe(front, conn, consumer_id=0, sub=SUB, request_id=10, sub_type=s.SubType.Shared):
    return call(front, conn, command("SUBSCRIBE", "subscribe", topic=TOPIC, subscription=sub, subType=sub_type,
                                     consumer_id=consumer_id, request_id=request_id,
                                     initialPosition=s.InitialPosition.Earliest))


def flow(front, conn, consumer_id=0, permits=100):
    return call(front, conn, command("FLOW", "flow", consumer_id=consumer_id, messagePermits=permits))


def publish(front, conn, *bodies):
    producer(front, conn, TOPIC, producer_id=7, request_id=70, producer_name="p")
    for i, body in enumerate(bodies):
        [receipt] = send(front, conn, 7, i, body)
        assert receipt.type == s.Type.SEND_RECEIPT


def messages(front, conn):
    front.pump()
    return [(m.message.message_id.entryId, m.message.redelivery_count) for m in pushed(conn)
            if m.type == s.Type.MESSAGE]


def consuming(*bodies):
    """A connection with a Shared consumer holding permits, and ``bodies`` stored."""
    front, conn = connected()
    subscribe(front, conn)
    flow(front, conn)
    publish(front, conn, *bodies)
    return front, conn


def ack(front, conn, offset, request_id=None):
    fields = {"consumer_id": 0, "ack_type": s.AckType.Individual, "message_id": [{"ledgerId": 0, "entryId": offset}]}
    if request_id is not None:
        fields["request_id"] = request_id
    return call(front, conn, command("ACK", "ack", **fields))


def redeliver(front, conn, *offsets):
    return call(front, conn, command("REDELIVER_UNACKNOWLEDGED_MESSAGES", "redeliverUnacknowledgedMessages",
                                     consumer_id=0, message_ids=[{"ledgerId": 0, "entryId": o} for o in offsets]))


def acknowledged(front, offset):
    return front.core.subscriptions.acknowledged(SUB, STORED, offset)


# -- the error a refusal carries ------------------------------------------------------------------
def test_a_refusal_carries_the_rules_server_error_or_the_operations_default():
    def code(operation, **fields):
        return refusal_code(outcome_of(rule_from(operation, "refuse", **fields), "pulsar", 0))
    assert code("send") == s.ServerError.PersistenceError
    assert code("heartbeat") == code("route") == s.ServerError.ServiceNotReady
    assert code("ack") == s.ServerError.PersistenceError
    assert code("send", error="ChecksumError") == code("send", error=9) == code("send", error="9") == 9
    # another dialect's error (a rule for every dialect) or a code Pulsar does not have: the default
    assert code("route", error="SYSTEM_ERROR") == code("route", error=999) == s.ServerError.ServiceNotReady


# -- pull: FLOW and dispatch ----------------------------------------------------------------------
def test_a_dropped_flow_swallows_its_permits_and_the_next_flow_is_served():
    front, conn = connected()
    subscribe(front, conn)
    rule = add(front, "pull", "drop", group=SUB, times=1)
    assert flow(front, conn) == []
    publish(front, conn, b"a")
    assert messages(front, conn) == []
    flow(front, conn, permits=1)
    assert messages(front, conn) == [(0, 0)] and rule.hits == 1


def test_a_refused_flow_closes_the_consumer_and_gives_back_what_it_held_uncounted():
    front, conn = consuming(b"a")
    assert messages(front, conn) == [(0, 0)]
    add(front, "pull", "refuse", topic=TOPIC, times=1)
    [closed] = flow(front, conn)
    assert (closed.type, closed.close_consumer.consumer_id) == (s.Type.CLOSE_CONSUMER, 0)
    assert 0 not in conn.consumers
    subscribe(front, conn, request_id=11)               # the client comes back
    flow(front, conn)
    assert messages(front, conn) == [(0, 0)]            # its count unchanged, as Pulsar does on a reconnect


def test_delay_and_duplicate_are_asked_per_message_dispatched_not_at_flow():
    front, conn = connected()
    subscribe(front, conn)
    rule = add(front, "pull", "duplicate", group=SUB, times=1)
    flow(front, conn)
    assert rule.hits == 0                               # (FLOW asks only refuse and drop)
    publish(front, conn, b"a", b"b")
    assert messages(front, conn) == [(0, 0), (0, 0), (1, 0)]
    assert rule.hits == 1 and front.core.store.max_offset(STORED, 0) == 2        # two records, not three
    assert front.core.subscriptions.consumer_stats(conn.consumers[0])["unacked"] == 2       # held once each


def test_a_delayed_message_goes_out_on_the_brokers_clock_and_not_to_a_consumer_gone_since():
    front, conn = connected()
    subscribe(front, conn)
    flow(front, conn)
    add(front, "pull", "delay", group=SUB, delay_ms=5_000, times=2)
    publish(front, conn, b"a")
    assert messages(front, conn) == []
    front.core.advance_clock(4_999)
    assert messages(front, conn) == []
    front.core.advance_clock(1)
    assert messages(front, conn) == [(0, 0)]
    publish(front, conn, b"b")                          # delayed too; its consumer leaves meanwhile
    assert messages(front, conn) == []
    call(front, conn, command("CLOSE_CONSUMER", "close_consumer", consumer_id=0, request_id=12))
    front.core.advance_clock(5_000)
    assert messages(front, conn) == []                  # it went back to the subscription instead
    subscribe(front, conn, request_id=13)
    flow(front, conn)
    assert messages(front, conn) == [(0, 0), (1, 0)]


def test_a_hold_keeps_its_subscription_from_dispatch_until_removed_and_others_go_on():
    front, conn = connected()
    other = Connection()
    call(front, other, command("CONNECT", "connect", client_version="t", protocol_version=20))
    subscribe(front, conn)
    subscribe(front, other, sub="audit")
    flow(front, conn)
    flow(front, other)
    woken = []
    front.on_dirty = lambda: woken.append(1)
    hold = add(front, "pull", "hold", group=SUB)
    publish(front, conn, b"a")
    assert messages(front, conn) == [] and messages(front, other) == [(0, 0)]
    woken.clear()
    front.core.faults.remove(hold.id)
    assert woken                                        # the front is told: it pumps again
    assert messages(front, conn) == [(0, 0)]


def test_a_hold_with_a_window_lets_dispatch_go_on_when_the_window_ends():
    front, conn = connected()
    subscribe(front, conn)
    flow(front, conn)
    now = front.core.clock.now_ms()
    add(front, "pull", "hold", topic=TOPIC, window_ms=(now, now + 10_000))
    publish(front, conn, b"a")
    assert messages(front, conn) == []
    front.core.advance_clock(9_999)
    assert messages(front, conn) == []
    front.core.advance_clock(1)
    assert messages(front, conn) == [(0, 0)]


# -- ack ------------------------------------------------------------------------------------------
def test_a_refused_ack_is_not_recorded_and_a_receipt_says_why():
    front, conn = consuming(b"a", b"b")
    messages(front, conn)
    add(front, "ack", "refuse", group=SUB, times=2)
    [answer] = ack(front, conn, 0, request_id=5)
    assert (answer.type, answer.ackResponse.request_id, answer.ackResponse.error) == \
        (s.Type.ACK_RESPONSE, 5, s.ServerError.PersistenceError)
    assert "fault rule" in answer.ackResponse.message
    assert ack(front, conn, 1) == []                    # no receipt asked: silence, as for a drop
    assert not acknowledged(front, 0) and not acknowledged(front, 1)


def test_a_dropped_ack_leaves_the_message_with_the_consumer_until_it_asks_for_it_again():
    front, conn = consuming(b"a")
    messages(front, conn)
    add(front, "ack", "drop", group=SUB, times=1)
    assert ack(front, conn, 0, request_id=5) == []      # not even the receipt
    assert not acknowledged(front, 0)
    redeliver(front, conn)                              # REDELIVER_UNACKNOWLEDGED_MESSAGES, all
    assert messages(front, conn) == [(0, 1)]


def test_a_delayed_ack_is_recorded_and_answered_later_on_the_clock():
    front, conn = consuming(b"a")
    messages(front, conn)
    add(front, "ack", "delay", group=SUB, delay_ms=3_000, times=1)
    assert ack(front, conn, 0, request_id=5) == []
    assert not acknowledged(front, 0)
    front.core.advance_clock(3_000)
    assert acknowledged(front, 0)
    [answer] = pushed(conn)
    assert (answer.type, answer.ackResponse.request_id, answer.ackResponse.HasField("error")) == \
        (s.Type.ACK_RESPONSE, 5, False)


# -- send back: REDELIVER_UNACKNOWLEDGED_MESSAGES -------------------------------------------------
def test_a_dropped_nack_is_ignored_and_a_delayed_one_counts_later():
    front, conn = consuming(b"a")
    messages(front, conn)
    add(front, "send_back", "drop", group=SUB, times=1)
    redeliver(front, conn, 0)
    assert messages(front, conn) == []                  # still with the consumer
    add(front, "send_back", "delay", group=SUB, delay_ms=2_000, times=1)
    redeliver(front, conn, 0)
    assert messages(front, conn) == []
    front.core.advance_clock(2_000)
    assert messages(front, conn) == [(0, 1)]


def test_a_refused_nack_closes_the_consumer_and_does_not_count():
    front, conn = consuming(b"a")
    messages(front, conn)
    add(front, "send_back", "refuse", group=SUB, times=1)
    [closed] = redeliver(front, conn, 0)
    assert closed.type == s.Type.CLOSE_CONSUMER and 0 not in conn.consumers
    subscribe(front, conn, request_id=11)
    flow(front, conn)
    assert messages(front, conn) == [(0, 0)]


# -- heartbeat: CONNECT, SUBSCRIBE, PRODUCER -------------------------------------------------------
def test_refused_subscribe_and_producer_get_errors_with_their_request_ids():
    front, conn = connected()
    add(front, "heartbeat", "refuse", topic=TOPIC, times=2)
    [refused] = subscribe(front, conn, request_id=21)
    assert (refused.type, refused.error.request_id, refused.error.error) == \
        (s.Type.ERROR, 21, s.ServerError.ServiceNotReady)
    assert conn.consumers == {}
    [refused] = producer(front, conn, TOPIC, producer_id=1, request_id=22)
    assert (refused.error.request_id, refused.error.error) == (22, s.ServerError.ServiceNotReady)
    assert conn.producers == {}


def test_a_refused_connect_is_an_error_and_the_connection_closes():
    front, _ = connected()
    add(front, "heartbeat", "refuse", error="AuthorizationError", times=1)
    conn = Connection()
    [refused] = call(front, conn, command("CONNECT", "connect", client_version="t", protocol_version=20))
    assert (refused.type, refused.error.error) == (s.Type.ERROR, s.ServerError.AuthorizationError)
    assert conn.closed and not conn.connected


def test_a_dropped_subscribe_is_not_made_and_a_delayed_one_is_answered_later():
    front, conn = connected()
    add(front, "heartbeat", "drop", group=SUB, times=1)
    assert subscribe(front, conn, request_id=31) == [] and conn.consumers == {}
    add(front, "heartbeat", "delay", group=SUB, delay_ms=1_000, times=1)
    assert subscribe(front, conn, request_id=32) == []
    front.core.advance_clock(1_000)
    [ok] = pushed(conn)
    assert (ok.type, ok.success.request_id) == (s.Type.SUCCESS, 32) and 0 in conn.consumers


# -- route: lookups ---------------------------------------------------------------------------------
def test_refused_lookups_fail_in_band_dropped_ones_are_not_answered_delayed_ones_later():
    front, conn = connected()
    add(front, "route", "refuse", topic=TOPIC, times=1)
    [lookup] = call(front, conn, command("LOOKUP", "lookupTopic", topic=TOPIC, request_id=41))
    r = lookup.lookupTopicResponse
    assert (r.request_id, r.response, r.error) == (41, s.LookupType.Failed, s.ServerError.ServiceNotReady)
    add(front, "route", "refuse", topic=TOPIC, error="TopicNotFound", times=1)
    [meta] = call(front, conn, command("PARTITIONED_METADATA", "partitionMetadata", topic="orders", request_id=42))
    r = meta.partitionMetadataResponse
    assert (r.request_id, r.response, r.error) == (42, s.PartitionedLookupType.Failed, s.ServerError.TopicNotFound)
    add(front, "route", "drop", topic=TOPIC, times=1)
    assert call(front, conn, command("LOOKUP", "lookupTopic", topic=TOPIC, request_id=43)) == []
    add(front, "route", "delay", topic=TOPIC, delay_ms=500, times=1)
    assert call(front, conn, command("LOOKUP", "lookupTopic", topic=TOPIC, request_id=44)) == []
    front.core.advance_clock(500)
    [late] = pushed(conn)
    assert (late.lookupTopicResponse.request_id, late.lookupTopicResponse.response) == (44, s.LookupType.Connect)


# -- send: what keeps the client's pending queue sound ------------------------------------------------
def test_a_checksum_error_is_sent_only_for_the_oldest_send_the_client_waits_for():
    front, conn = connected()
    producer(front, conn, TOPIC, producer_id=1, request_id=1, producer_name="p")
    add(front, "send", "drop", topic=TOPIC, times=1)
    add(front, "send", "refuse", topic=TOPIC, error="ChecksumError", times=1)
    assert send(front, conn, 1, 0, b"lost") == []
    [refused] = send(front, conn, 1, 1, b"refused")
    # sequence 0 is still unanswered: ChecksumError for 1 would break libpulsar's queue
    assert (refused.send_error.sequence_id, refused.send_error.error) == (1, s.ServerError.PersistenceError)
    other, conn2 = connected(front)
    producer(front, conn2, TOPIC, producer_id=1, request_id=1, producer_name="q")
    add(front, "send", "refuse", topic=TOPIC, error="ChecksumError", times=1)
    [refused] = send(front, conn2, 1, 0, b"refused", name="q")
    assert refused.send_error.error == s.ServerError.ChecksumError


def test_a_send_refused_for_good_fences_the_producers_topic_until_the_rule_goes():
    front, conn = connected()
    producer(front, conn, TOPIC, producer_id=1, request_id=1, producer_name="p")
    rule = add(front, "send", "refuse", topic=TOPIC)
    [refused] = send(front, conn, 1, 0, b"x")
    assert refused.type == s.Type.SEND_ERROR
    front.disconnect(conn)                              # the client closes the connection and reconnects
    again = Connection()
    call(front, again, command("CONNECT", "connect", client_version="t", protocol_version=20))
    [fenced] = producer(front, again, TOPIC, producer_id=1, request_id=2, producer_name="p")
    assert (fenced.type, fenced.error.error) == (s.Type.ERROR, s.ServerError.ServiceNotReady)
    front.core.faults.remove(rule.id)
    [ok] = producer(front, again, TOPIC, producer_id=1, request_id=3, producer_name="p")
    assert ok.type == s.Type.PRODUCER_SUCCESS


def test_a_send_refused_a_counted_number_of_times_does_not_fence():
    front, conn = connected()
    producer(front, conn, TOPIC, producer_id=1, request_id=1, producer_name="p")
    add(front, "send", "refuse", topic=TOPIC, times=2)
    send(front, conn, 1, 0, b"x")
    front.disconnect(conn)
    again = Connection()
    call(front, again, command("CONNECT", "connect", client_version="t", protocol_version=20))
    [ok] = producer(front, again, TOPIC, producer_id=1, request_id=2, producer_name="p")
    assert ok.type == s.Type.PRODUCER_SUCCESS


# -- the front and the rules ----------------------------------------------------------------------------
def test_a_closed_front_is_no_longer_told_of_rule_changes():
    front, _ = connected()
    faults = front.core.faults
    assert front._faults_changed in faults.on_change
    front.close()
    assert front._faults_changed not in faults.on_change


def test_a_send_refused_with_a_producer_level_error_refuses_the_producer_with_it():
    front, conn = connected()
    producer(front, conn, TOPIC, producer_id=1, request_id=1, producer_name="p")
    add(front, "send", "refuse", topic=TOPIC, error="TopicTerminatedError")
    [refused] = send(front, conn, 1, 0, b"x")
    assert refused.send_error.error == s.ServerError.TopicTerminatedError
    front.disconnect(conn)
    again = Connection()
    call(front, again, command("CONNECT", "connect", client_version="t", protocol_version=20))
    [fenced] = producer(front, again, TOPIC, producer_id=1, request_id=2, producer_name="p")
    assert fenced.error.error == s.ServerError.TopicTerminatedError
    [other] = producer(front, again, TOPIC, producer_id=2, request_id=3, producer_name="someone else")
    assert other.type == s.Type.PRODUCER_SUCCESS       # (the producer the rule refused, not the topic's others)


def test_match_asks_only_the_rules_of_the_actions_named():
    front, _ = connected()
    faults = front.core.faults
    delay = add(front, "pull", "delay", delay_ms=1_000)
    drop = add(front, "pull", "drop")
    assert faults.match(Operation.PULL, actions=(Action.DUPLICATE,)) is None
    assert faults.match(Operation.PULL, actions=(Action.REFUSE, Action.DROP)) is drop
    assert faults.match(Operation.PULL) is delay and (delay.hits, drop.hits) == (1, 1)


def test_duplicates_drawn_by_probability_are_the_same_run_after_run():
    def run():
        front, conn = connected()
        subscribe(front, conn)
        flow(front, conn, permits=1_000)
        add(front, "pull", "duplicate", group=SUB, probability=0.3)
        publish(front, conn, *[b"m%d" % i for i in range(40)])
        return [offset for offset, _ in messages(front, conn)]
    first = run()
    doubled = sorted({o for o in first if first.count(o) == 2})
    assert 0 < len(doubled) < 40 and sorted(set(first)) == list(range(40))
    assert run() == first                               # the broker's seeded source: the same faults
