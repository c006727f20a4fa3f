"""The README's RemoteBroker examples, run as written against a real `serve` subprocess:
the only change is the address (the README says 127.0.0.1:9876, the test picks a free
port). A block that says `--clock virtual` in a comment runs against a virtual-clock
server; every other one against the default (real-clock) server, as `./dev serve` starts
it."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.processes import EmulatorProcess
from tests.support.readme import for_server, promised, python_blocks, reader_env

README_ADDRESS = "127.0.0.1:9876"


def remote_blocks():
    return [b for b in python_blocks() if f'RemoteBroker("{README_ADDRESS}")' in b]


def test_the_readme_has_remote_examples_for_both_clocks():
    kinds = {"--clock virtual" in b for b in remote_blocks()}
    assert kinds == {True, False}


@pytest.mark.parametrize("block", remote_blocks(), ids=lambda b: "virtual" if "--clock virtual" in b else "real")
def test_readme_remote_example_runs_as_written(block, tmp_path):
    args = ("--clock", "virtual") if "--clock virtual" in block else ()
    server = EmulatorProcess(tmp_path / "store", *args).start()
    try:
        done = subprocess.run([sys.executable, "-c", for_server(block, server)], capture_output=True, text=True,
                              timeout=90, env=reader_env())
        assert done.returncode == 0, done.stderr[-3000:]
        said = promised(block)          # a `print(...)  # value` line in the README promises that value
        assert done.stdout.split("\n")[:len(said)] == said
    finally:
        server.stop()
