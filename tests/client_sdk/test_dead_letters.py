"""A group's dead letters from Python (EmbeddedBroker) and the re-drive rule
(broker/rocketmq_model/dead_letters.py): a new message in the original topic with the body, tags, keys
and user properties, ORIGIN_MESSAGE_ID kept, reconsume count 0; each dead letter once,
also after a restart."""
from __future__ import annotations

import pytest

from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.rocketmq_model.dead_letters import REDRIVEN_FROM, DeadLetterError
from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, RECONSUME_LATER, EmbeddedBroker, Message
from rocketmq_emulator.delay_scheduler import VirtualClock


def poison_to_dlq(broker: EmbeddedBroker, deliveries: list, body: bytes = b"poison"):
    """One message that fails twice (maxReconsumeTimes 1: then the DLQ) and succeeds after."""
    broker.create_topic("Orders", 1)
    sent = broker.producer("pg").send(Message("Orders", body, tags="TagP", keys="order-7",
                                              properties={"tenant": "acme"}))

    def listener(msgs, ctx):
        deliveries.append(msgs[0])
        return RECONSUME_LATER if sum(m.body == body for m in deliveries) <= 2 else CONSUME_SUCCESS
    broker.push_consumer("billing", "Orders", listener=listener, max_reconsume_times=1)
    broker.advance("1m")
    return sent


def test_a_dead_letter_is_listed_with_what_became_of_it():
    broker = EmbeddedBroker()
    deliveries: list = []
    sent = poison_to_dlq(broker, deliveries)
    [dead] = broker.dead_letters("billing")
    assert (dead.original_topic, dead.tags, dead.keys, dead.attempts, dead.redriven_as) == (
        "Orders", "TagP", "order-7", 2, None)
    assert dead.origin_message_id == sent.offset_msg_id and dead.msg_id == sent.msg_id
    [record] = broker.dlq_messages("billing")
    assert dead.offset_msg_id == record.offset_msg_id and dead.died_at_ms == record.store_timestamp
    assert broker.dead_letters("nobody") == []


def test_redrive_sends_it_back_once_as_a_new_message_with_a_fresh_retry_budget():
    broker = EmbeddedBroker()
    deliveries: list = []
    sent = poison_to_dlq(broker, deliveries)
    [dead] = broker.dead_letters("billing")
    assert broker.redrive("billing", dry_run=True).sent == ((dead.offset_msg_id, ""),)
    assert broker.redrive("billing", [sent.msg_id], dry_run=True).sent == ((dead.offset_msg_id, ""),)
    assert len(broker.messages("Orders")) == 1                 # a dry run sends nothing
    result = broker.redrive("billing")
    [(was, new_id)] = result.sent
    assert was == dead.offset_msg_id and result.already == ()
    first, again = broker.messages("Orders")
    assert again.offset_msg_id == new_id != first.offset_msg_id
    assert (again.body, again.tags, again.keys, again.reconsume_times) == (b"poison", "TagP", "order-7", 0)
    assert again.user_properties == {"tenant": "acme", REDRIVEN_FROM: dead.offset_msg_id}
    assert again.properties["ORIGIN_MESSAGE_ID"] == sent.offset_msg_id and again.msg_id == sent.msg_id
    assert not {"RETRY_TOPIC", "REAL_TOPIC", "DELAY", "MAX_RECONSUME_TIMES"} & set(again.properties)
    broker.advance("1s")
    assert (deliveries[-1].offset_msg_id, deliveries[-1].reconsume_times) == (new_id, 0)   # consumed again
    again_result = broker.redrive("billing")
    assert (again_result.sent, again_result.already) == ((), (dead.offset_msg_id,))   # nothing twice
    assert broker.dead_letters("billing")[0].redriven_as == new_id
    assert len(broker.messages("Orders")) == 2


def test_bad_requests_are_one_line_and_send_nothing():
    broker = EmbeddedBroker()
    poison_to_dlq(broker, [])
    with pytest.raises(DeadLetterError, match="has no dead letters"):
        broker.redrive("nobody")
    with pytest.raises(DeadLetterError, match="not a dead letter of billing"):
        broker.redrive("billing", ["xyz"])
    with pytest.raises(DeadLetterError, match="not a dead letter of billing"):
        broker.redrive("billing", ["7F000001" + "00002A9F" + "0" * 16])
    assert len(broker.messages("Orders")) == 1


def test_a_redrive_is_remembered_across_a_restart(tmp_path):
    clock = VirtualClock()
    broker = EmbeddedBroker(BrokerCore.open(tmp_path / "store", clock))
    poison_to_dlq(broker, [])
    [(dead_id, new_id)] = broker.redrive("billing").sent
    broker.close()
    reopened = EmbeddedBroker(BrokerCore.open(tmp_path / "store", clock))
    assert reopened.dead_letters("billing")[0].redriven_as == new_id
    assert reopened.redrive("billing", [dead_id.lower()]).already == (dead_id,)
    assert len(reopened.messages("Orders")) == 2
    reopened.close()


def test_dead_letters_of_a_cluster_come_back_to_their_own_broker():
    broker = EmbeddedBroker(brokers=2)
    broker.create_topic("Orders", 1)
    producer = broker.producer("pg")
    for i in range(4):
        producer.send(Message("Orders", b"poison-%d" % i))
    broker.push_consumer("billing", "Orders", listener=lambda msgs, ctx: RECONSUME_LATER, max_reconsume_times=0)
    broker.advance("1m")
    dead = broker.dead_letters("billing")
    assert len(dead) == 4 and {broker.broker_of(m) for m in broker.dlq_messages("billing")} == {"broker-a", "broker-b"}
    result = broker.redrive("billing", [d.msg_id for d in dead])
    assert len(result.sent) == 4
    moved = {m.offset_msg_id: broker.broker_of(m) for m in broker.messages("Orders")}
    dlq_broker = {m.offset_msg_id: broker.broker_of(m) for m in broker.dlq_messages("billing")}
    assert all(moved[new] == dlq_broker[old] for old, new in result.sent)


def test_a_5x_groups_dead_letters_redrive_the_same_way(tmp_path):
    """5.x groups dead-letter on the broker (attempts exhausted): their %DLQ% copies name
    the topic too, so the same rule sends them back."""
    from rocketmq_emulator.client_sdk.simulation import GroupSpec, Scenario, run_simulation

    scenario = Scenario(seed=2, messages=200, duration_ms=10 * 60_000,
                        groups=(GroupSpec(protocol="5.x", poison_every=100, max_reconsume_times=2),))
    assert run_simulation(scenario, tmp_path / "store").ok
    broker = EmbeddedBroker(BrokerCore.open(tmp_path / "store", VirtualClock()))
    dead = broker.dead_letters("SimGroup")
    assert len(dead) == 2 and {d.original_topic for d in dead} == {"SimTopic"}
    assert len(broker.redrive("SimGroup").sent) == 2
    again = [m for m in broker.messages("SimTopic") if REDRIVEN_FROM in m.properties]
    assert sorted(m.body[:8] for m in again) == [b"00000000", b"00000100"]
    assert {m.reconsume_times for m in again} == {0}
    broker.close()


def test_a_dead_letter_damaged_on_disk_is_left_out_and_the_others_are_listed(tmp_path):
    # Without the CRC property nothing at recovery catches properties damaged into bytes
    # that are not UTF-8; the list skips that record (as every other view of the store
    # does) instead of failing for all of them.
    from rocketmq_emulator.broker.operations import SendRequest
    from rocketmq_emulator.broker.rocketmq_model.dead_letters import dead_letter_page, dead_letters
    from rocketmq_emulator.store import MessageStore, StoreConfig

    def opened():
        return BrokerCore(MessageStore(tmp_path, StoreConfig(prop_crc=False)), VirtualClock())
    core = opened()
    channel = core.connect()
    for body, keys in ((b"first", "zzMARKzz"), (b"second", "order-8")):
        core.send(SendRequest("pg", "%RETRY%billing", body, 0, {"KEYS": keys}, reconsume_times=2,
                              max_reconsume_times=2), channel)
    core.close()
    [segment] = (tmp_path / "commitlog").iterdir()
    segment.write_bytes(segment.read_bytes().replace(b"zzMARKzz", b"zz\xffARKzz"))
    core = opened()
    assert [d.keys for d in dead_letters(core, "billing")] == ["order-8"]
    assert [d.keys for d in dead_letter_page(core, "billing")[0]] == ["order-8"]
