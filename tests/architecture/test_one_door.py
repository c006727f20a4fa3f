"""One door into the broker (issue 48, item 1): fronts, the CLI and the SDK call
BrokerCore's typed methods (broker/CORE_API.md; broker/facade/), never a service behind
it — ``core.store``, ``core.subscriptions``, ``core.faults``, ``core.topics`` ... — and
import of the core only its API, the codecs and the typed values (allow-lists with their
reasons). Each rule is checked against a planted violation.

A reach is read on the syntax tree: an attribute named after one of the core's services
taken of something whose name ends in ``core`` (``core``, ``self.core``, ``front.core``,
``self.core()``). None is left (each moved behind a typed method of the door)."""
from __future__ import annotations

import ast
from collections import Counter

import pytest

from .imports import ROOT, import_graph
from .test_layers import layer

# BrokerCore's services: private to the core (its own modules reach them; nothing outside).
SERVICES = {"store", "topics", "groups", "configs", "consumers", "producers", "locks", "schedule", "holds", "kept",
            "events", "notify", "rates", "deliveries", "offsets", "pops", "pulsar_topics", "compaction",
            "subscriptions", "pulsar_producers", "transactions", "faults", "names", "flush_hooks", "levels", "rng"}
OUTSIDE = ("broker/fronts", "broker/cli", "client_sdk")


def _names_a_core(node) -> bool:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id.endswith("core")
    if isinstance(node, ast.Attribute):
        return node.attr.endswith("core")
    return False


def reaches(source: str) -> Counter:
    """Attribute reaches into a core's services (or its private names) in ``source``."""
    found = Counter()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and _names_a_core(node.value) and \
                (node.attr in SERVICES or node.attr.startswith("_")):
            found[node.attr] += 1
    return found


def reach_violations(files: dict[str, str]) -> list[str]:
    out = []
    for rel, source in sorted(files.items()):
        for service, n in sorted(reaches(source).items()):
            out.append(f"{rel} reaches core.{service} {n} times: call a typed method of BrokerCore "
                       f"(broker/facade/) instead")
    return out


def outside_files() -> dict[str, str]:
    return {p.relative_to(ROOT).as_posix(): p.read_text() for base in OUTSIDE for p in (ROOT / base).rglob("*.py")}


def test_fronts_the_cli_and_the_sdk_reach_no_service_of_the_core():
    assert reach_violations(outside_files()) == []


def test_the_reach_rule_sees_a_planted_reach():
    files = outside_files()
    files["broker/fronts/remoting/processors/route.py"] += "\n\ndef planted(front):\n    front.core.store.read(0)\n"
    files["client_sdk/admin.py"] += "\n\ndef planted(core):\n    return core.subscriptions.stats(), core._later\n"
    assert reach_violations(files) == [
        "broker/fronts/remoting/processors/route.py reaches core.store 1 times: call a typed method of BrokerCore "
        "(broker/facade/) instead",
        "client_sdk/admin.py reaches core._later 1 times: call a typed method of BrokerCore (broker/facade/) instead",
        "client_sdk/admin.py reaches core.subscriptions 1 times: call a typed method of BrokerCore "
        "(broker/facade/) instead"]


# What fronts and the CLI may import of the core, each with its reason: the door (the
# core and its facade), the typed values it takes and gives, and the codecs' shared
# pieces (names and bounds a wire encodes). No service, no read model, no operation's
# module: those are reached through the door. (client_sdk's list: test_dependencies.py.)
FRONTS_MAY_IMPORT = {
    # the door
    "broker.core": "BrokerCore: the typed operations and views (broker/facade/)",
    "broker.facade.across": "the door's reads and operations over several brokers (a message's life, the groups, "
                            "a re-drive) and the values they give (dead letters, rate kinds, dialects)",
    "broker.facade.pulsar_admin": "LATEST and EARLIEST, the positions the Pulsar admin's operations take",
    "broker.cluster": "the door of several brokers: a Cluster, its live members, the next time due across them",
    # typed values
    "broker.operations": "typed requests and results",
    "broker.notifications": "the core's typed notifications",
    "broker.events": "the event kinds a front subscribes to",
    "broker.errors": "RequestRefused and the core's other errors",
    "broker.config": "BrokerConfig",
    "broker.core_types": "Channel and ConsumeMessageContext",
    "broker.retry_lifecycle": "the one retry decision every dialect asks (a pure function and its constants)",
    "broker.rocketmq_model.topics": "TopicConfig, topic names and their checks",
    "broker.rocketmq_model.groups": "SubscriptionGroupConfig, a subscription's data, a group name's check",
    "broker.rocketmq_model.message_types": "a 5.x topic's message type",
    "broker.rocketmq_model.invisible_time": "a 5.x invisible time's bound (MAX_INVISIBLE_MS, as the real broker's)",
    "broker.pulsar_model.cursors": "SubType, a subscription's outcomes, the properties a Pulsar entry carries",
    "broker.pulsar_model.producers": "AccessMode, a producer's admission, its properties",
    "broker.pulsar_model.topics": "PulsarAdminError (Pulsar's refusals) and the partition bound",
    # codecs' shared pieces
    "broker.pulsar_model.names": "the codec of names: a Pulsar topic's and message id's text and its store name",
    "broker.dialects": "which store topics are another dialect's (a 5.x front refuses them as the real one would)",
    "broker.java_fields": "Java's field widths (the codecs check numbers with them)",
    "broker.user_properties": "which properties are the user's (each codec copies those)",
    "broker.log_text": "names escaped for a terminal or a log",
    "broker.faults.door": "FaultOutcome and its kinds: the typed outcome of the door a front translates",
    "broker.rocketmq_model.priorities": "a message's priority property, its bound and its refusal (the codec reads it)",
    "broker.rocketmq_model.lite_topics": "the lite topics' bounds and sync outcomes the 5.x settings and replies carry, "
                                         "and a lite topic's store name",
    "broker.pulsar_model.non_persistent": "the non-persistent domain's name and Pulsar's refusal text",
    "broker.faults.rules": "a rule's typed values: Operation, FaultError, the error-code registry of a dialect, "
                           "and a FAULT event's rule (fault_of: the text the rule set writes, read back)",
}


def import_violations(graph: dict[str, set[str]]) -> list[str]:
    out = []
    for module, deps in sorted(graph.items()):
        here = layer(module)
        if not (here.startswith("front:") or here == "cli"):
            continue
        for dep in sorted(deps):
            if layer(dep) == "core" and dep not in FRONTS_MAY_IMPORT:
                out.append(f"{module} imports {dep}, not part of the core's API for fronts")
    return out


@pytest.fixture(scope="module")
def graph():
    return import_graph()


def test_fronts_and_the_cli_import_only_the_core_api_codecs_and_typed_values(graph):
    assert import_violations(graph) == []


def unused_entries(graph: dict[str, set[str]], allowed) -> list[str]:
    imported = {dep for module, deps in graph.items() if layer(module).startswith("front:") or layer(module) == "cli"
                for dep in deps}
    return sorted(set(allowed) - imported)


def test_every_entry_of_the_fronts_list_is_used(graph):
    """An entry no front or CLI module imports any more is taken off the list (so it
    shrinks as reaches move behind the door); a planted stale entry is seen."""
    assert unused_entries(graph, FRONTS_MAY_IMPORT) == []
    assert unused_entries(graph, {**FRONTS_MAY_IMPORT, "broker.views.message_life": "stale"}) == \
        ["broker.views.message_life"]


def test_the_fronts_import_rule_sees_a_planted_import(graph):
    planted = {k: set(v) for k, v in graph.items()}
    planted["broker.fronts.grpc5.front"].add("broker.rocketmq_model.sending")
    planted["broker.cli.serve"].add("broker.kept_records")
    assert import_violations(planted) == [
        "broker.cli.serve imports broker.kept_records, not part of the core's API for fronts",
        "broker.fronts.grpc5.front imports broker.rocketmq_model.sending, not part of the core's API for fronts"]
