"""The Pulsar dialect's fault table (issue 48, item 2): every outcome the door can give a
command has its one row in fault_answers._ANSWERS, and the rows the frame-by-frame tests
(test_fault_answers.py) reach only through another command are shown here on their own.
With no rule installed the front never asks the door."""
from __future__ import annotations

import pytest

pytest.importorskip("google_crc32c", reason="needs the pulsar extra: ./dev test installs it")

from rocketmq_emulator.broker.faults.door import Fault  # noqa: E402
from rocketmq_emulator.broker.faults.rules import Action, FaultError, Operation, rule_from  # noqa: E402
from rocketmq_emulator.broker.fronts.pulsar import fault_answers  # noqa: E402
from rocketmq_emulator.broker.fronts.pulsar import schema as s  # noqa: E402
from rocketmq_emulator.broker.fronts.pulsar.front import Connection  # noqa: E402
from tests.broker.fronts.pulsar.raw import call, command, connected, producer, pushed, send  # noqa: E402
from tests.broker.fronts.pulsar.test_fault_answers import (  # noqa: E402
    SUB, TOPIC, STORED, ack, acknowledged, add, consuming, flow, messages, publish, redeliver, subscribe)

_KIND = {Action.REFUSE: Fault.REFUSED, Action.DROP: Fault.DROPPED, Action.DELAY: Fault.DELAYED,
         Action.DUPLICATE: Fault.DUPLICATED, Action.HOLD: Fault.HELD}


def _allowed(operation: Operation) -> set[Fault]:
    kinds = set()
    for action in Action:
        try:
            rule_from(operation, action, delay_ms=1 if action is Action.DELAY else 0)
        except FaultError:
            continue
        kinds.add(_KIND[action])
    return kinds


def test_every_outcome_the_door_gives_a_command_has_exactly_one_row():
    rows = set(fault_answers._ANSWERS)
    expected = set()
    for command_type, (operation, kinds, _) in fault_answers._ASKED.items():
        expected |= {(command_type, kind) for kind in _allowed(operation)
                     if kinds is None or kind in kinds}
    expected.add((s.Type.MESSAGE, Fault.HELD))          # (a hold: asked per subscription, answered per dispatch)
    assert rows == expected
    # a pull's outcomes are split between FLOW and its MESSAGEs, none lost, none asked twice
    flow_kinds = {k for c, k in rows if c == s.Type.FLOW}
    message_kinds = {k for c, k in rows if c == s.Type.MESSAGE}
    assert flow_kinds | message_kinds == _allowed(Operation.PULL) and not flow_kinds & message_kinds


# -- SEND's rows -------------------------------------------------------------------------------------
def stored_count(front):
    return front.core.store.max_offset(STORED, 0)


def test_a_dropped_send_is_not_stored_unless_the_rule_says_stored():
    front, conn = connected()
    producer(front, conn, TOPIC, producer_id=1, request_id=1, producer_name="p")
    add(front, "send", "drop", topic=TOPIC, times=1)
    assert send(front, conn, 1, 0, b"lost") == [] and stored_count(front) == 0
    add(front, "send", "drop", topic=TOPIC, stored=True, times=1)
    assert send(front, conn, 1, 1, b"kept") == [] and stored_count(front) == 1
    assert pushed(conn) == []                           # no receipt, ever
    front.core.advance_clock(60_000)
    assert pushed(conn) == []


def test_a_delayed_send_is_stored_at_once_and_its_receipt_comes_on_the_brokers_clock():
    front, conn = connected()
    producer(front, conn, TOPIC, producer_id=1, request_id=1, producer_name="p")
    add(front, "send", "delay", topic=TOPIC, delay_ms=2_000, times=1)
    assert send(front, conn, 1, 0, b"late") == [] and stored_count(front) == 1
    add(front, "send", "refuse", topic=TOPIC, error="ChecksumError", times=1)
    [refused] = send(front, conn, 1, 1, b"refused")
    # sequence 0's receipt is still due: a ChecksumError now would break the client's queue
    assert refused.send_error.error == s.ServerError.PersistenceError
    front.core.advance_clock(1_999)
    assert pushed(conn) == []
    front.core.advance_clock(1)
    [receipt] = pushed(conn)
    assert (receipt.type, receipt.send_receipt.sequence_id, receipt.send_receipt.message_id.entryId) == \
        (s.Type.SEND_RECEIPT, 0, 0)
    add(front, "send", "refuse", topic=TOPIC, error="ChecksumError", times=1)
    [refused] = send(front, conn, 1, 2, b"refused")     # nothing unanswered now: the rule's own error
    assert refused.send_error.error == s.ServerError.ChecksumError


# -- the rows of the commands answered once, on the commands the other file does not use ------------
def test_a_delayed_producer_is_made_now_and_answered_later_and_a_dropped_one_is_not_made():
    front, conn = connected()
    add(front, "heartbeat", "drop", group="p", times=1)
    assert producer(front, conn, TOPIC, producer_id=1, request_id=1, producer_name="p") == []
    assert conn.producers == {}
    add(front, "heartbeat", "delay", group="p", delay_ms=700, times=1)
    assert producer(front, conn, TOPIC, producer_id=1, request_id=2, producer_name="p") == []
    assert 1 in conn.producers
    front.core.advance_clock(699)
    assert pushed(conn) == []
    front.core.advance_clock(1)
    [ok] = pushed(conn)
    assert (ok.type, ok.producer_success.request_id) == (s.Type.PRODUCER_SUCCESS, 2)


def test_a_refused_producer_carries_the_rules_error_and_a_dropped_connect_is_left_unanswered():
    front, conn = connected()
    add(front, "heartbeat", "refuse", group="p", error="ProducerBusy", times=1)
    [refused] = producer(front, conn, TOPIC, producer_id=1, request_id=3, producer_name="p")
    assert (refused.type, refused.error.request_id, refused.error.error) == \
        (s.Type.ERROR, 3, s.ServerError.ProducerBusy)
    add(front, "heartbeat", "drop", times=1)
    late = Connection()
    assert call(front, late, command("CONNECT", "connect", client_version="t", protocol_version=20)) == []
    assert not late.connected and not late.closed


# -- a delay whose consumer left meanwhile ------------------------------------------------------------
def test_a_delayed_ack_or_nack_of_a_consumer_gone_since_is_not_applied():
    front, conn = consuming(b"a")
    messages(front, conn)
    add(front, "ack", "delay", group=SUB, delay_ms=1_000, times=1)
    add(front, "send_back", "delay", group=SUB, delay_ms=1_000, times=1)
    assert ack(front, conn, 0, request_id=5) == []
    assert redeliver(front, conn, 0) == []
    call(front, conn, command("CLOSE_CONSUMER", "close_consumer", consumer_id=0, request_id=12))
    pushed(conn)
    subscribe(front, conn, request_id=13)               # the same consumer id, a new consumer
    pushed(conn)
    front.core.advance_clock(1_000)
    assert not acknowledged(front, 0) and pushed(conn) == []
    flow(front, conn)
    assert messages(front, conn) == [(0, 0)]            # given back on close, not counted by the nack


# -- no rule: the door is never asked ----------------------------------------------------------------
def test_with_no_rule_installed_no_command_asks_the_door(monkeypatch):
    front, conn = connected()
    core = front.core
    assert core.faults_active is False

    def asked(*args, **kwargs):
        raise AssertionError("the door was asked with no rule installed")
    monkeypatch.setattr(core, "fault_outcome", asked)
    monkeypatch.setattr(core, "fault_held", asked)
    subscribe(front, conn)
    flow(front, conn)
    publish(front, conn, b"a", b"b")
    assert messages(front, conn) == [(0, 0), (1, 0)]
    assert ack(front, conn, 0, request_id=5)[0].type == s.Type.ACK_RESPONSE
    redeliver(front, conn, 1)
    assert messages(front, conn) == [(1, 1)]
    [lookup] = call(front, conn, command("LOOKUP", "lookupTopic", topic=TOPIC, request_id=6))
    assert lookup.lookupTopicResponse.response == s.LookupType.Connect
