"""The door of the fault rules (broker/faults/door.py): one rule's fields, written once;
one outcome per fired rule, the same for every dialect but its refusal code."""
from __future__ import annotations

from dataclasses import fields

import pytest

from rocketmq_emulator.broker.faults.placement import RULE_FIELDS as DOCUMENT_FIELDS
from rocketmq_emulator.broker.faults.rules import RULE_FIELDS, FaultRule, rule_from
from rocketmq_emulator.client_sdk.simulation.fault_rules import FaultSpec, fault_spec


def test_the_rule_fields_are_listed_once():
    names = [name for name, _, _ in RULE_FIELDS]
    assert [f.name for f in fields(FaultRule)][:len(names)] == names
    assert [f.name for f in fields(FaultSpec)] == names
    assert [n.replace("window", "window_ms").replace("delay", "delay_ms") for n in DOCUMENT_FIELDS] == names


def test_a_scenario_rule_is_the_broker_rule():
    spec = fault_spec("send", "drop", topic="T", probability=0.5, stored=True, window=("1m", "2m"))
    rule = spec.rule(start_ms=1000)
    assert (rule.topic, rule.probability, rule.stored, rule.window_ms) == ("T", 0.5, True, (61_000, 121_000))


def test_an_unknown_field_is_named():
    with pytest.raises(ValueError, match="colour: not a field of a fault rule"):
        rule_from("send", "refuse", colour="red")
