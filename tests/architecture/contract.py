"""AST checks of the core's contract (DESIGN.md): what a module of the sans-I/O core may
not call, and whose private names a module may not touch. Used by test_contract.py;
plain functions over source text so the tests can feed them examples too."""
from __future__ import annotations

import ast

__all__ = ["nondeterminism", "private_accesses", "private_names_defined"]

# module -> names whose use reads the wall clock, sleeps, or draws unseeded randomness
_FORBIDDEN = {
    "time": {"time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns", "sleep",
             "process_time", "localtime", "gmtime", "ctime", "asctime", "strftime"},
    "datetime": {"now", "utcnow", "today"},
    "random": {"random", "randint", "randrange", "choice", "choices", "shuffle", "sample", "uniform", "getrandbits",
               "gauss", "betavariate", "expovariate", "triangular", "seed", "randbytes"},
    "os": {"urandom", "getrandom"},
}
_FORBIDDEN_MODULES = {"uuid", "secrets", "threading"}        # importing them at all


def nondeterminism(source: str) -> list[str]:
    """Every use in ``source`` of the wall clock, sleeping, threads or unseeded
    randomness, as "line N: what" (aliases and ``from ... import`` included;
    ``random.Random(seed)`` and methods of an injected generator are fine)."""
    tree = ast.parse(source)
    found: list[str] = []
    module_alias: dict[str, str] = {}       # local name -> forbidden module it names
    direct: dict[str, str] = {}             # local name -> "module.name" imported from it
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                root = a.name.split(".")[0]
                if root in _FORBIDDEN_MODULES:
                    found.append(f"line {node.lineno}: import {a.name}")
                if a.name in _FORBIDDEN or a.name == "datetime":
                    module_alias[a.asname or a.name] = a.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            root = node.module.split(".")[0]
            if root in _FORBIDDEN_MODULES:
                found.append(f"line {node.lineno}: from {node.module} import ...")
            for a in node.names:
                if node.module in _FORBIDDEN and a.name in _FORBIDDEN[node.module]:
                    direct[a.asname or a.name] = f"{node.module}.{a.name}"
                if node.module == "datetime" and a.name in ("datetime", "date"):
                    module_alias[a.asname or a.name] = "datetime"
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id in direct:
            found.append(f"line {node.lineno}: {direct[f.id]}()")
        elif isinstance(f, ast.Attribute):
            base = f.value
            # time.monotonic(), t.sleep() (import time as t), random.randrange(), os.urandom()
            if isinstance(base, ast.Name) and base.id in module_alias:
                module = module_alias[base.id]
                if f.attr in _FORBIDDEN.get(module, ()):
                    found.append(f"line {node.lineno}: {module}.{f.attr}()")
            # datetime.datetime.now(), datetime.date.today()
            elif (isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name)
                  and module_alias.get(base.value.id) == "datetime" and f.attr in _FORBIDDEN["datetime"]):
                found.append(f"line {node.lineno}: datetime.{base.attr}.{f.attr}()")
    return sorted(set(found), key=lambda s: int(s.split(":")[0].split()[1]))


def private_names_defined(source: str) -> set[str]:
    """The single-underscore names a module defines: functions, classes, methods,
    attributes assigned on anything (``self._x = ...``), slots, module globals."""
    tree = ast.parse(source)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)           # __slots__ entries
    return {n for n in names if _private(n)}


def private_accesses(source: str) -> list[tuple[int, str]]:
    """(line, name) of each ``something._name`` read or written where something is not
    ``self`` or ``cls`` (a module's own friends are sorted out by the caller)."""
    tree = ast.parse(source)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            base = node.value
            if isinstance(base, ast.Name) and base.id in ("self", "cls"):
                continue
            out.append((node.lineno, node.attr))
    return out


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")
