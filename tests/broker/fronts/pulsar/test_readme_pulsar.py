"""The README's Pulsar example, run as written against a real `serve` subprocess: the only
change is the address (the README says 127.0.0.1:6650, the test picks a free port)."""
from __future__ import annotations

import pathlib
import re

import pytest

from tests.support.processes import EmulatorProcess

README = pathlib.Path(__file__).resolve().parents[4] / "README.md"
pytestmark = pytest.mark.interop


def test_the_readme_pulsar_example_runs(tmp_path):
    pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
    section = README.read_text().split("## Guide: Pulsar clients", 1)[1].split("\n## ", 1)[0]
    [block] = re.findall(r"```python\n(.*?)```", section, re.S)
    assert "127.0.0.1:6650" in block
    server = EmulatorProcess(tmp_path / "store", pulsar=True).start()
    try:
        ns: dict = {}
        exec(compile(block.replace("127.0.0.1:6650", f"127.0.0.1:{server.pulsar_port}"), "README", "exec"), ns)
        again = ns["consumer"].receive(timeout_millis=5000)
        assert (ns["msg"].data(), again.data(), again.redelivery_count()) == (b"hello", b"hello", 1)
        ns["client"].close()
    finally:
        server.stop()
