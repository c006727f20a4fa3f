"""The broker's layers (broker/README.md), on the import graph (imports.py): the core —
everything in broker/ outside fronts/, adapters/ and cli/ — never imports a front, an
adapter or the CLI; a front never imports another front; the shared listener plumbing
(adapters/) imports no front and no CLI; and no module of any package takes part in an
import cycle. Each rule is also checked against a planted violation, so a rule that
stopped seeing anything would fail."""
from __future__ import annotations

import pytest

from .imports import cycles, import_graph


def layer(module: str) -> str:
    parts = module.split(".")
    if parts[0] != "broker":
        return parts[0]
    if len(parts) > 2 and parts[1] == "fronts":
        return "front:" + parts[2]
    if len(parts) > 1 and parts[1] in ("fronts", "adapters", "cli"):
        return parts[1]
    return "core"


def violations(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for module, deps in sorted(graph.items()):
        here = layer(module)
        for dep in sorted(deps):
            there = layer(dep)
            if here == "core" and (there.startswith("front") or there in ("adapters", "cli")):
                found.append(f"the core module {module} imports {dep} ({there})")
            elif here.startswith("front:") and there.startswith("front:") and here != there:
                found.append(f"the front module {module} imports another front's {dep}")
            elif here == "adapters" and (there.startswith("front") or there == "cli"):
                found.append(f"the shared adapter {module} imports {dep} ({there})")
    return found


@pytest.fixture(scope="module")
def graph():
    return import_graph()


def test_the_graph_sees_the_project(graph):
    assert "broker.core" in graph and "broker.fronts.remoting.front" in graph
    assert "broker.core" in graph["broker.fronts.remoting.listener"] or \
        "broker.core" in set().union(*(graph[m] for m in graph if m.startswith("broker.fronts.remoting")))


def test_the_core_imports_no_front_adapter_or_cli_and_fronts_do_not_import_each_other(graph):
    assert violations(graph) == []


def test_the_layer_rule_sees_planted_violations(graph):
    planted = {k: set(v) for k, v in graph.items()}
    planted["broker.core"].add("broker.fronts.remoting.front")
    planted["broker.fronts.pulsar.front"].add("broker.fronts.http.dashboard")
    planted["broker.adapters.connection_guard"].add("broker.cli.main")
    assert violations(planted) == [
        "the shared adapter broker.adapters.connection_guard imports broker.cli.main (cli)",
        "the core module broker.core imports broker.fronts.remoting.front (front:remoting)",
        "the front module broker.fronts.pulsar.front imports another front's broker.fronts.http.dashboard"]


def test_no_import_cycles_anywhere(graph):
    assert cycles(graph) == []


def test_the_cycle_check_sees_a_planted_cycle(graph):
    planted = {k: set(v) for k, v in graph.items()}
    planted["store.records"].add("store.message_store")
    assert ["store.message_store", "store.records"] in [sorted(c) for c in cycles(planted)] or \
        any({"store.message_store", "store.records"} <= set(c) for c in cycles(planted))


def test_an_import_for_type_checking_or_inside_a_function_is_an_edge_of_the_graph(tmp_path):
    """A circle hidden behind ``if TYPE_CHECKING:`` or a function-level import is still
    a circle: the graph reads both (planted in a module of its own)."""
    from .imports import _imported, project_modules

    planted = tmp_path / "planted.py"
    planted.write_text("from typing import TYPE_CHECKING\n"
                       "if TYPE_CHECKING:\n    from rocketmq_emulator.client_sdk.push_consumer import PushConsumer\n"
                       "def later():\n    from rocketmq_emulator.store import records\n")
    assert _imported(planted, "client_sdk.planted", project_modules()) == {"client_sdk.push_consumer",
                                                                          "store.records"}
