"""The core's contract, checked on the syntax tree (tests/architecture/contract.py)
rather than by substrings: no wall clock, sleep, thread or unseeded randomness in
broker/, store/, delay_scheduler/ (aliases and ``from`` imports included), and no
module touching a private name its own package does not define. Each exemption is
named here with its reason."""
from __future__ import annotations

import pathlib

import pytest

from .contract import nondeterminism, private_accesses, private_names_defined

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("broker", "store", "delay_scheduler", "client_sdk", "spark_analytics")
CORE = ("broker", "store", "delay_scheduler")

# Modules of the core packages that run on real time or real I/O by design.
REAL_TIME_EXEMPT = {
    "delay_scheduler/clock.py": "SystemClock is the real clock the core is given",
}
REAL_TIME_EXEMPT_DIRS = {
    "broker/adapters/": "the listeners' shared plumbing: connection timeouts run on real time (README: limits)",
    "broker/fronts/": "the fronts' listeners: connection timeouts and a client's long poll run on real time",
    "broker/cli/": "the command line: real sockets; `message send` is a producer, its message's born time and "
                   "id are the wall clock's",
}
# (module, private name) pairs allowed although another package defines the name.
PRIVATE_EXEMPT = {
    ("broker/fronts/mqtt/bridge.py", "_queue"): "aiomqtt has no public API for its incoming-message queue "
                                                  "length; the egress rework (issue 19, item 6) removes it",
    ("spark_analytics/session.py", "_ensure_initialized"): "pyspark: attaching a SparkContext to a gateway it "
                                                           "did not start has no public call",
    ("spark_analytics/jobs.py", "_jdf"): "pyspark: a local checkpoint's RDD stays in the block manager until it is "
                                         "unpersisted; DataFrame.unpersist does not reach it (classic), the JVM "
                                         "Dataset's logical plan, reached through _jdf, does",
    ("spark_analytics/watchdog.py", "_jsc"): "pyspark's StatusTracker does not list executors; the JVM "
                                             "SparkContext's getExecutorIds, reached through _jsc, does",
}


def modules(pkg: str):
    return sorted((ROOT / pkg).rglob("*.py"))


def rel(path: pathlib.Path) -> str:
    return path.relative_to(ROOT).as_posix()


# -- the checker catches what the substring check let through ------------------------------------
@pytest.mark.parametrize("source, expected", [
    ("from time import monotonic\nmonotonic()\n", ["line 2: time.monotonic()"]),
    ("import time as t\nt.sleep(1)\n", ["line 2: time.sleep()"]),
    ("import time\ntime.time_ns()\n", ["line 2: time.time_ns()"]),
    ("import random\nrandom.randrange(10)\n", ["line 2: random.randrange()"]),
    ("from random import choice as pick\npick([1])\n", ["line 2: random.choice()"]),
    ("import datetime\ndatetime.datetime.now()\n", ["line 2: datetime.datetime.now()"]),
    ("from datetime import datetime\ndatetime.utcnow()\n", ["line 2: datetime.utcnow()"]),
    ("import os\nos.urandom(8)\n", ["line 2: os.urandom()"]),
    ("import uuid\n", ["line 1: import uuid"]),
    ("from secrets import token_hex\n", ["line 1: from secrets import ..."]),
    ("import threading\n", ["line 1: import threading"]),
])
def test_the_checker_finds(source, expected):
    assert nondeterminism(source) == expected


@pytest.mark.parametrize("source", [
    "import random\nrng = random.Random(7)\nrng.randrange(3)\n",        # a seeded generator
    "def f(core):\n    return core.rng.choice([1, 2])\n",                 # an injected one
    "def f(clock):\n    return clock.now_ms()\n",
    "import time\nx = time.struct_time\n",                                # no call that reads the clock
])
def test_the_checker_allows(source):
    assert nondeterminism(source) == []


def test_the_issues_example_in_store_offsets_is_caught():
    source = (ROOT / "store" / "offsets.py").read_text()
    planted = source + "\nfrom time import monotonic\nmonotonic()\nimport random\nrandom.randrange(5)\n"
    assert [h.split(": ")[1] for h in nondeterminism(planted)] == ["time.monotonic()", "random.randrange()"]
    assert nondeterminism(source) == []


# -- the tree ------------------------------------------------------------------------------------
def test_the_core_reads_no_wall_clock_and_draws_no_unseeded_randomness():
    found = {}
    for pkg in CORE:
        for path in modules(pkg):
            name = rel(path)
            if name in REAL_TIME_EXEMPT or any(name.startswith(d) for d in REAL_TIME_EXEMPT_DIRS):
                continue
            hits = nondeterminism(path.read_text())
            if hits:
                found[name] = hits
    assert not found, found


def test_no_module_touches_another_packages_private_names():
    defined = {pkg: set().union(*(private_names_defined(p.read_text()) for p in modules(pkg))) for pkg in PACKAGES}
    found = []
    for pkg in PACKAGES:
        for path in modules(pkg):
            for line, name in private_accesses(path.read_text()):
                if name not in defined[pkg] and (rel(path), name) not in PRIVATE_EXEMPT:
                    found.append(f"{rel(path)}:{line} {name}")
    assert not found, found


def test_every_exemption_is_still_needed():
    for (module, name) in PRIVATE_EXEMPT:
        assert name in {n for _, n in private_accesses((ROOT / module).read_text())}, (module, name)
    for module in REAL_TIME_EXEMPT:
        assert nondeterminism((ROOT / module).read_text()), module


def test_the_private_rule_flags_a_reach_into_another_package():
    """idle_skip once read the core's outgoing list, and might read the held pulls' index
    (PullHoldService._by_queue); the rule would flag it."""
    assert (92, "_by_queue") in private_accesses("\n" * 91 + "x = core.holds._by_queue\n")
    assert "_by_queue" not in set().union(*(private_names_defined(p.read_text()) for p in modules("client_sdk")))
    assert "_by_queue" in set().union(*(private_names_defined(p.read_text()) for p in modules("broker")))
