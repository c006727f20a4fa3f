"""The project's import graph, read from the syntax tree: every module of the five
packages and the project modules it imports — at the top, inside a function (a lazy
import is still a dependency) or under ``if TYPE_CHECKING:`` (a type named there is a
dependency of the design, and a circle through it is a circle all the same). Names
are the repository's: ``broker.fronts.remoting.front``, ``store`` for a package's
``__init__``. Used by test_layers.py."""
from __future__ import annotations

import ast
import pathlib

__all__ = ["ROOT", "PACKAGES", "project_modules", "import_graph", "cycles"]

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("broker", "store", "delay_scheduler", "client_sdk", "spark_analytics")
_PREFIX = "rocketmq_emulator."


def project_modules() -> dict[str, pathlib.Path]:
    mods = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = path
    return mods


def _imported(path: pathlib.Path, name: str, mods: dict) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            module = module[len(_PREFIX):] if module.startswith(_PREFIX) else module
            # `from pkg import submodule` depends on the submodule; `from pkg import name` on pkg
            subs = [f"{module}.{a.name}" for a in node.names]
            targets = [s for s in subs if s in mods]
            if len(targets) < len(subs):
                targets.append(module)
        else:
            continue
        for t in targets:
            t = t[len(_PREFIX):] if t.startswith(_PREFIX) else t
            parts = t.split(".")
            for i in range(len(parts), 0, -1):          # the longest prefix that is a module
                if ".".join(parts[:i]) in mods:
                    found.add(".".join(parts[:i]))
                    break
    found.discard(name)
    return found


def import_graph() -> dict[str, set[str]]:
    mods = project_modules()
    return {name: _imported(path, name, mods) for name, path in mods.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found
