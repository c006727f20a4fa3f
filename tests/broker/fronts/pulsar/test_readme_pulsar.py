"""The README's Pulsar example, run as written against a real `serve` subprocess: the only
change is the address (the README says 127.0.0.1:6650, the test picks a free port)."""
from __future__ import annotations

import pytest

from tests.support.processes import EmulatorProcess
from tests.support.readme import README, for_server, python_blocks
pytestmark = pytest.mark.interop


def test_the_readme_pulsar_example_runs(tmp_path):
    pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
    section = README.read_text().split("## Guide: Pulsar clients", 1)[1].split("\n## ", 1)[0]
    block = python_blocks(section)[0]
    assert "127.0.0.1:6650" in block
    server = EmulatorProcess(tmp_path / "store", pulsar=True).start()
    try:
        ns: dict = {}
        exec(compile(for_server(block, server), "README", "exec"), ns)
        again = ns["consumer"].receive(timeout_millis=5000)
        assert (ns["msg"].data(), again.data(), again.redelivery_count()) == (b"hello", b"hello", 1)
        ns["client"].close()
    finally:
        server.stop()


def test_the_readme_non_persistent_example_runs(tmp_path):
    """The non-persistent topics' example (issue 51): its asserts are the check."""
    pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
    section = README.read_text().split("### Non-persistent topics", 1)[1].split("\n## ", 1)[0]
    [block] = python_blocks(section)
    assert "non-persistent://" in block and "RegexSubscriptionMode" in block
    server = EmulatorProcess(tmp_path / "store", pulsar=True).start()
    try:
        exec(compile(for_server(block, server), "README", "exec"), {})
    finally:
        server.stop()
