"""The door's fault rules over several brokers (broker/facade/across.py) and a core's own
random source for them (reseed_faults): what EmbeddedBroker.faults and a scenario's
rules call instead of reaching each core's fault set."""
import random

from rocketmq_emulator.broker.config import BrokerConfig
from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.facade.across import (clear_fault_rules, fault_rules, place_fault_rule,
                                                    remove_fault_rule)
from rocketmq_emulator.broker.faults.rules import Operation, rule_from


def two_cores():
    return [BrokerCore.in_memory(config=BrokerConfig(broker_name=name)) for name in ("broker-a", "broker-b")]


def refused(core) -> bool:
    return core.fault_outcome(Operation.SEND, topic="Orders") is not None


def test_a_rule_placed_on_several_brokers_is_one_rule_counted_across_them():
    a, b = two_cores()
    place_fault_rule([a], rule_from("pull", "delay", delay_ms=5))          # id 1, on broker-a only
    rule = place_fault_rule([a, b], rule_from("send", "refuse", topic="Orders", times=2))
    assert rule.id == 2                                                     # one id, past every broker's
    assert a.faults_active and b.faults_active
    assert refused(b) and refused(a)
    assert not refused(a) and not refused(b)                                # "times 2" across the two
    assert rule.hits == 2 and rule.hits_on == {"broker-a": 1, "broker-b": 1}
    listed = fault_rules([a, b])
    assert [(r["id"], r["operation"], r["brokers"], r["state"]) for r in listed] == [
        (1, "pull", ["broker-a"], "active"), (2, "send", ["broker-a", "broker-b"], "spent")]
    assert listed[1]["hits"] == 2


def test_a_rule_removed_or_cleared_is_gone_from_every_broker():
    a, b = two_cores()
    rule = place_fault_rule([a, b], rule_from("send", "refuse", topic="Orders"))
    assert remove_fault_rule([a, b], rule.id) is True
    assert not a.faults_active and not b.faults_active and fault_rules([a, b]) == []
    assert not refused(a) and not refused(b)
    assert remove_fault_rule([a, b], rule.id) is False                      # already gone: no error
    place_fault_rule([a, b], rule_from("send", "refuse", topic="Orders"))
    place_fault_rule([a, b], rule_from("pull", "delay", delay_ms=5))
    place_fault_rule([b], rule_from("ack", "drop"))
    assert clear_fault_rules([a, b]) == 3        # each rule once, though two are on both brokers
    assert fault_rules([a, b]) == [] and not a.faults_active and not b.faults_active
    assert clear_fault_rules([a, b]) == 0


def test_a_cores_rules_draw_their_probabilities_from_the_source_it_is_reseeded_with():
    draws = random.Random("seed")
    expected = [draws.random() < 0.5 for _ in range(40)]
    seen = []
    for core in two_cores():
        place_fault_rule([core], rule_from("send", "refuse", topic="Orders", probability=0.5))
        core.reseed_faults(random.Random("seed"))
        seen.append([refused(core) for _ in range(40)])
    assert seen == [expected, expected]
    assert True in expected and False in expected        # (the draws decide, both ways)
