"""Fault rules decided at the door (issue 48, items 2 and 3), on the syntax tree:

* a front never asks the rule matcher itself (``faults.match``, ``faults.hold`` ... —
  the door, ``BrokerCore.fault_outcome``, does) and never reads a rule: of the fault
  rules' modules it takes the outcome type (faults/door.py) and, from rules.py, only the
  operations, the registration of its codes and the rules' error;
* no SDK module reads a private attribute of the broker's core, its services or the
  in-process hub (``core._hooks``, ``hub._faults``), nor the matcher's cache.

Each rule is also checked against a planted violation."""
from __future__ import annotations

import ast

from .imports import ROOT

# what a front may take from broker/faults/rules.py: no rule, no action, no matcher
# (fault_of: a FAULT event's rule, read back from the text the rule set writes — the
# dashboard's and /metrics' fault figures read events, not rules)
_RULES_NAMES_A_FRONT_MAY_USE = {"Operation", "register_error_codes", "FaultError", "fault_of"}
# the matcher and its state, behind the door
_MATCHER = {"match", "hold", "holds", "holding", "may_match", "may_match_cache", "about_periodic_work",
            "hold_ends", "applies_now", "on_change", "rules"}
# names under which the SDK reaches the broker's objects and the in-process hub
_BROKER_SIDE = {"core", "hub", "front", "faults", "store", "holds", "names", "subscriptions"}


def _sources(package: str) -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text() for p in (ROOT / package).rglob("*.py")}


def _owner(node: ast.Attribute) -> str | None:
    v = node.value
    if isinstance(v, ast.Attribute):
        return v.attr
    if isinstance(v, ast.Name):
        return v.id
    return None


def front_violations(sources: dict[str, str]) -> list[str]:
    found = []
    for path, text in sorted(sources.items()):
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("faults.rules"):
                for alias in node.names:
                    if alias.name not in _RULES_NAMES_A_FRONT_MAY_USE:
                        found.append(f"{path}:{node.lineno}: imports {alias.name} of the fault rules")
            elif isinstance(node, ast.Attribute) and node.attr in _MATCHER and _owner(node) == "faults" \
                    and not path.endswith("fronts/http/metrics.py"):
                found.append(f"{path}:{node.lineno}: asks faults.{node.attr} past the door")
    return found


def sdk_violations(sources: dict[str, str]) -> list[str]:
    found = []
    for path, text in sorted(sources.items()):
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.Attribute):
                continue
            owner = _owner(node)
            private = node.attr.startswith("_") and not node.attr.startswith("__")
            if private and (owner in _BROKER_SIDE or (owner or "").endswith("core")):
                found.append(f"{path}:{node.lineno}: reads {owner}.{node.attr}")
            elif node.attr in _MATCHER and owner == "faults":
                found.append(f"{path}:{node.lineno}: asks faults.{node.attr} past the door")
    return found


def test_fronts_read_only_the_outcome_of_the_door():
    assert front_violations(_sources("broker/fronts")) == []


def test_the_front_rule_sees_planted_violations():
    planted = {"broker/fronts/pulsar/front.py": (
        "from ...faults.rules import Action, Operation\n"
        "def f(core):\n"
        "    rule = core.faults.match(Operation.SEND)\n"
        "    return rule.action is Action.REFUSE or core.faults.holds('g')\n")}
    assert front_violations(planted) == [
        "broker/fronts/pulsar/front.py:1: imports Action of the fault rules",
        "broker/fronts/pulsar/front.py:3: asks faults.match past the door",
        "broker/fronts/pulsar/front.py:4: asks faults.holds past the door"]


def test_the_sdk_reads_no_private_attribute_of_the_core_or_the_hub():
    assert sdk_violations(_sources("client_sdk")) == []


def test_the_sdk_rule_sees_planted_violations():
    planted = {"client_sdk/transport/inprocess.py": (
        "def f(self, core):\n"
        "    if self.hub._faults or core.faults.may_match_cache:\n"
        "        return self.hub.core._hooks\n")}
    assert sdk_violations(planted) == [
        "client_sdk/transport/inprocess.py:2: reads hub._faults",
        "client_sdk/transport/inprocess.py:2: asks faults.may_match_cache past the door",
        "client_sdk/transport/inprocess.py:3: reads core._hooks"]
