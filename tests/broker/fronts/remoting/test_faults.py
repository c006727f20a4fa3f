"""Fault rules on the 4.x wire (issue 38): the SDK over the loopback transport (every
request encoded and decoded as over TCP, through the remoting front) and in process,
against rules on its broker; the store stays the truth."""
from __future__ import annotations

import pytest

from rocketmq_emulator.broker.events import EventKind
from rocketmq_emulator.broker.faults.rules import rule_from
from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, RECONSUME_LATER, EmbeddedBroker, Message
from rocketmq_emulator.client_sdk.errors import MQBrokerError
from rocketmq_emulator.client_sdk.faults import FaultError


@pytest.fixture(params=["loopback", "inprocess"])
def broker(request):
    """Over the loopback codec, and in process (where the hub carries commands to the 4.x
    front while a rule is on)."""
    b = EmbeddedBroker(transport=request.param)
    b.create_topic("Orders", queues=1)
    yield b
    b.close()


def _faults(broker):
    return broker.events.of_kind(EventKind.FAULT)


def test_a_refused_send_is_retried_by_the_producer_and_stored_once(broker):
    rule = broker.core.faults.add(rule_from("send", "refuse", topic="Orders", times=1))
    producer = broker.producer("pg")
    result = producer.send(Message("Orders", b"one"))
    assert result.msg_id
    assert [m.body for m in broker.messages("Orders")] == [b"one"]
    assert rule.hits == 1 and broker.core.faults.rules() == []          # used up: gone
    assert len(_faults(broker)) == 1


def test_a_send_stored_but_not_acknowledged_makes_the_producers_retry_a_duplicate(broker):
    broker.core.faults.add(rule_from("send", "drop", topic="Orders", times=1, stored=True))
    producer = broker.producer("pg")
    producer.send(Message("Orders", b"twice"))
    stored = broker.messages("Orders")
    assert [m.body for m in stored] == [b"twice", b"twice"]
    assert stored[0].msg_id == stored[1].msg_id                          # the same message id: a duplicate


def test_a_dropped_send_that_was_not_stored_is_stored_once_by_the_retry(broker):
    broker.core.faults.add(rule_from("send", "drop", topic="Orders", times=1))
    broker.producer("pg").send(Message("Orders", b"once"))
    assert [m.body for m in broker.messages("Orders")] == [b"once"]


def test_a_delayed_pull_answer_comes_on_the_brokers_clock(broker):
    producer = broker.producer("pg")
    producer.send(Message("Orders", b"late"))
    got = []
    broker.core.faults.add(rule_from("pull", "delay", group="cg", delay_ms=5_000, times=1))
    broker.push_consumer("cg", "Orders", listener=lambda msgs, ctx: got.extend(msgs) or CONSUME_SUCCESS)
    broker.advance("4s")
    assert got == []
    broker.advance("2s")
    assert [m.body for m in got] == [b"late"]


def test_a_duplicated_pull_delivers_a_message_twice_from_one_record(broker):
    broker.producer("pg").send(Message("Orders", b"again"))
    got = []
    broker.core.faults.add(rule_from("pull", "duplicate", group="cg", times=1))
    broker.push_consumer("cg", "Orders", listener=lambda msgs, ctx: got.extend(msgs) or CONSUME_SUCCESS)
    broker.advance("2s")
    assert [m.body for m in got] == [b"again", b"again"]
    assert len(broker.messages("Orders")) == 1


def test_a_refused_send_back_makes_the_consumer_publish_the_retry_copy_itself(broker):
    """Seed 004's path: CONSUMER_SEND_MSG_BACK refused, the PushConsumer sends the retry
    copy to %RETRY%<group> itself; the message comes back once, as its next attempt."""
    broker.producer("pg").send(Message("Orders", b"poison"))
    got = []
    rule = broker.core.faults.add(rule_from("send_back", "refuse", group="cg", times=1))
    broker.push_consumer("cg", "Orders", max_reconsume_times=2,
                         listener=lambda msgs, ctx: got.extend(msgs) or RECONSUME_LATER)
    broker.advance("10m")
    assert rule.hits == 1
    assert [m.reconsume_times for m in got] == [0, 1, 2]                  # the copy it published came back
    assert [m.body for m in broker.dlq_messages("cg")] == [b"poison"]     # the third failure: the DLQ


def test_with_no_rule_nothing_is_matched(broker):
    assert broker.core.faults.active is False and broker.core.faults_active is False


def test_the_cores_one_test_follows_the_rules_as_they_are_added_and_removed(broker):
    """``faults_active``, the attribute every front and the SDK test before asking the
    door, is kept as rules come and go (a stale False would skip every rule)."""
    core = broker.core
    rule = core.faults.add(rule_from("send", "refuse", topic="Orders", times=1))
    assert core.faults_active is True
    core.faults.remove(rule.id)
    assert core.faults_active is False
    core.faults.add(rule_from("pull", "delay", delay_ms=1000))
    assert core.faults_active is True
    core.faults.clear()
    assert core.faults_active is False
    broker.producer("pg").send(Message("Orders", b"x"))
    assert _faults(broker) == []


def test_a_dropped_ack_makes_the_message_come_back_to_the_group(broker):
    """The consumer's commits (inside its pulls and UPDATE_CONSUMER_OFFSET) are lost: the
    group's next consumer is given the message again."""
    broker.producer("pg").send(Message("Orders", b"acked?"))
    rule = broker.core.faults.add(rule_from("ack", "drop", group="cg"))
    first, again = [], []
    consumer = broker.push_consumer("cg", "Orders", listener=lambda msgs, ctx: first.extend(msgs) or CONSUME_SUCCESS)
    broker.advance("30s")
    consumer.shutdown()                                                 # its last commit: lost too
    assert [m.body for m in first] == [b"acked?"]
    assert rule.hits >= 1 and broker.committed_offset("cg", "Orders", 0) <= 0
    broker.core.faults.clear()
    broker.push_consumer("cg", "Orders", listener=lambda msgs, ctx: again.extend(msgs) or CONSUME_SUCCESS)
    broker.advance("30s")
    assert [m.body for m in again] == [b"acked?"]


def test_a_delayed_ack_inside_a_pull_is_recorded_later(broker):
    broker.producer("pg").send(Message("Orders", b"m"))
    broker.core.faults.add(rule_from("ack", "delay", group="cg", delay_ms=60_000))
    broker.push_consumer("cg", "Orders", listener=lambda msgs, ctx: CONSUME_SUCCESS)
    broker.advance("4s")
    assert broker.committed_offset("cg", "Orders", 0) <= 0
    broker.advance("2m")
    assert broker.committed_offset("cg", "Orders", 0) == 1


def test_the_python_api_adds_counts_and_removes_rules_as_a_context_manager(broker):
    producer = broker.producer("pg")
    with broker.faults.add("send", "refuse", topic="Orders", times=5) as rule:
        with pytest.raises(MQBrokerError, match="Send \\[3\\] times, still failed"):
            producer.send(Message("Orders", b"a"))      # refused, retried twice more: all three refused
    assert rule.hits == 3
    assert broker.faults.list() == []                    # gone with the block
    producer.send(Message("Orders", b"b"))
    assert broker.messages("Orders")[-1].body == b"b"


@pytest.mark.parametrize("kwargs, field", [
    ({"operation": "sned", "action": "refuse"}, "operation"),
    ({"operation": "send", "action": "explode"}, "action"),
    ({"operation": "send", "action": "refuse", "probability": 1.5}, "probability"),
    ({"operation": "send", "action": "delay", "delay": -5}, "delay"),
    ({"operation": "send", "action": "delay", "delay": "soon"}, "delay"),
    ({"operation": "send", "action": "refuse", "broker": "broker-z"}, "broker"),
])
def test_a_bad_rule_is_refused_naming_its_field(broker, kwargs, field):
    with pytest.raises(ValueError, match=f"^{field}:"):
        broker.faults.add(**kwargs)
    assert broker.faults.list() == []


def test_a_hold_stops_deliveries_to_its_group_until_it_is_removed(broker):
    broker.producer("pg").send(Message("Orders", b"held"))
    held, other = [], []
    hold = broker.faults.add("pull", "hold", group="cg")
    broker.push_consumer("cg", "Orders", listener=lambda msgs, ctx: held.extend(msgs) or CONSUME_SUCCESS)
    broker.push_consumer("other", "Orders", listener=lambda msgs, ctx: other.extend(msgs) or CONSUME_SUCCESS)
    broker.advance("2m")                            # several suspend times: answered, pulled again, held again
    assert [m.body for m in other] == [b"held"] and held == []
    assert hold.hits >= 2
    hold.remove()
    broker.advance("1s")                            # the held pull runs again at the next tick
    assert [m.body for m in held] == [b"held"]
    assert len(broker.messages("Orders")) == 1


def test_a_hold_in_a_window_releases_when_the_window_ends(broker):
    got = []
    broker.faults.add("pull", "hold", group="cg", window=("0s", "40s"))
    broker.push_consumer("cg", "Orders", listener=lambda msgs, ctx: got.extend(msgs) or CONSUME_SUCCESS)
    broker.producer("pg").send(Message("Orders", b"after the window"))
    broker.advance("35s")
    assert got == []
    broker.advance("20s")                           # the window ended: the next pull delivers
    assert [m.body for m in got] == [b"after the window"]


def test_a_held_pull_still_records_the_consumers_progress(broker):
    producer = broker.producer("pg")
    producer.send(Message("Orders", b"first"))
    got = []
    broker.push_consumer("cg", "Orders", listener=lambda msgs, ctx: got.extend(msgs) or CONSUME_SUCCESS)
    broker.advance("2s")
    assert [m.body for m in got] == [b"first"]
    broker.faults.add("pull", "hold", group="cg")
    producer.send(Message("Orders", b"second"))
    broker.advance("1m")
    assert [m.body for m in got] == [b"first"]
    assert broker.committed_offset("cg", "Orders", 0) == 1      # the commit a held pull carried


def test_when_the_retry_topic_refuses_too_the_consumer_retries_locally(broker):
    """Send-back refused and the client's own send to %RETRY% refused as well: the
    message stays in the consumer and is consumed again there 5 s later (checklist 74);
    nothing is stored twice, and once the rules are gone it is consumed and committed."""
    broker.producer("pg").send(Message("Orders", b"poison"))
    broker.faults.add("send_back", "refuse", group="cg")
    broker.faults.add("send", "refuse", topic="%RETRY%cg")
    seen = []

    def listener(msgs, ctx):
        seen.extend((m.body, m.reconsume_times, broker.clock.now_ms()) for m in msgs)
        return RECONSUME_LATER if len(seen) < 3 else CONSUME_SUCCESS

    broker.push_consumer("cg", "Orders", listener=listener)
    broker.advance("30s")
    assert [(body, times) for body, times, _ in seen] == [(b"poison", 0), (b"poison", 1), (b"poison", 2)]
    assert seen[1][2] - seen[0][2] >= 5000 and seen[2][2] - seen[1][2] >= 5000      # local retries, 5 s apart
    assert broker.messages("%RETRY%cg") == [] and len(broker.messages("Orders")) == 1
    broker.advance("10s")
    assert broker.committed_offset("cg", "Orders", 0) == 1


def test_rules_leave_the_in_process_typed_path_and_rules_about_other_calls_idle_skipping():
    """In process every call stays typed with rules installed (the broker's door
    decides, issue 48); a rule about another topic or group does not stop the skipping
    of idle spans (the no-cost promise for rules that do not match)."""
    broker = EmbeddedBroker()
    try:
        broker.create_topic("Orders", queues=1)
        for i in range(10):
            broker.faults.add("send", "refuse", topic=f"Other{i}")
        broker.faults.add("pull", "delay", delay="1s", group="elsewhere")
        transport = broker.connect()
        assert transport.core() is broker.core
        got = []
        broker.producer("pg").send(Message("Orders", b"m"))
        broker.push_consumer("cg", "Orders", listener=lambda msgs, ctx: got.extend(msgs) or CONSUME_SUCCESS)
        broker.advance("2s")
        skips = broker.hub.skipper.skips
        broker.advance("6h")
        assert [m.body for m in got] == [b"m"] and broker.hub.skipper.skips > skips
        broker.faults.add("pull", "delay", delay="1s", group="cg")          # about cg's pulls: no skipping
        skips = broker.hub.skipper.skips
        broker.advance("1h")
        assert broker.hub.skipper.skips == skips
    finally:
        broker.close()


def test_an_error_no_dialect_has_is_a_bad_rule_and_a_known_one_is_answered(broker):
    with pytest.raises(FaultError, match="^error: 'BOGUS' is not a refusal code of 4.x"):
        broker.faults.add("send", "refuse", error="BOGUS", dialect="4.x")
    with pytest.raises(FaultError, match="^error: 'SYSTEM_BUSSY' is not a refusal code"):
        broker.faults.add("send", "refuse", error="SYSTEM_BUSSY", dialect="4.x")
    assert broker.faults.list() == []
    broker.faults.add("send", "refuse", error="SYSTEM_BUSY", topic="Orders")
    with pytest.raises(MQBrokerError) as refused:
        broker.producer("pg").send(Message("Orders", b"busy"))
    assert refused.value.code_name == "SYSTEM_BUSY"


def test_a_pull_held_by_long_polling_is_duplicated_when_it_is_answered(broker):
    """The consumer's pull waits in the broker (nothing there yet); the message that
    wakes it is delivered twice, from one record."""
    got = []
    broker.push_consumer("cg", "Orders", listener=lambda msgs, ctx: got.extend(msgs) or CONSUME_SUCCESS)
    broker.advance("1s")                                            # its pull is held now
    rule = broker.faults.add("pull", "duplicate", group="cg", times=1)
    broker.advance("20s")                                           # the held pull ends empty: pulled again
    broker.producer("pg").send(Message("Orders", b"woke it"))
    broker.advance("1s")
    assert rule.hits == 1
    assert [m.body for m in got] == [b"woke it", b"woke it"] and len(broker.messages("Orders")) == 1


def test_a_pull_held_by_long_polling_answers_late_when_a_rule_delays_it(broker):
    got = []
    broker.push_consumer("cg", "Orders", listener=lambda msgs, ctx: got.extend(msgs) or CONSUME_SUCCESS)
    broker.advance("1s")
    broker.faults.add("pull", "delay", group="cg", delay="10s", times=1)
    broker.advance("20s")                                           # the next pull meets the rule, and waits
    broker.producer("pg").send(Message("Orders", b"late"))
    broker.advance("5s")
    assert got == []                                                # woken, and held back 10 s
    broker.advance("6s")
    assert [m.body for m in got] == [b"late"]
