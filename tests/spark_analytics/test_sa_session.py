"""Starting Spark as a user sees it, each in a child process (a JVM of its own): nothing
on stderr when it starts well; one line, quickly, when it cannot start or when a
standalone master does not take the application."""
from __future__ import annotations

import socket
import subprocess
import sys

import pytest

pytestmark = pytest.mark.spark

_START = """
import sys
from rocketmq_emulator.spark_analytics.errors import SparkStartError
from rocketmq_emulator.spark_analytics.session import build_session
master, memory, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
try:
    spark = build_session(master, driver_memory=memory, start_timeout=timeout)
except SparkStartError as exc:
    print(f"{exc.exit_code} {exc}")
    sys.exit(3)
print(spark.range(5).count())
"""


def start(master: str, memory: str = "512m", timeout: float = 20.0) -> subprocess.CompletedProcess:
    # The bound is generous: a child that ignored start_timeout would wait out Spark's
    # own three 20 s registration attempts and then print a stopped context's errors.
    return subprocess.run([sys.executable, "-c", _START, master, memory, str(timeout)],
                          capture_output=True, text=True, timeout=180)


_PLAIN_START = """
from rocketmq_emulator.spark_analytics.session import build_session
print(build_session("local[1]", driver_memory="512m").range(5).count())
"""


def test_a_good_start_prints_nothing_on_stderr():
    r = subprocess.run([sys.executable, "-c", _PLAIN_START], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0 and r.stdout.strip() == "5"
    # no 'WARNING: Using incubator modules', no 'Setting default log level to "WARN"'
    assert r.stderr == ""


def test_a_standalone_master_that_does_not_answer_is_given_a_bounded_wait():
    with socket.socket() as silent:            # accepts connections (the kernel does) and never replies
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        master = f"spark://127.0.0.1:{silent.getsockname()[1]}"
        r = start(master, timeout=3)
    assert r.returncode == 3, r.stderr
    assert r.stdout.strip() == f"1 the Spark master {master} did not take the application within 3 s " \
                               "(is it a Spark master, and its RPC port, usually 7077?)"
    assert r.stderr == ""                      # Spark's held start-up output is not dumped


def test_a_jvm_that_exits_while_starting_is_summed_up_in_one_line():
    r = start("local[1]", memory="lots")
    assert r.returncode == 3, r.stderr
    assert r.stdout.startswith("1 Spark's JVM exited while starting: ") and "lots" in r.stdout
    assert r.stdout.count("\n") == 1 and r.stderr == ""
