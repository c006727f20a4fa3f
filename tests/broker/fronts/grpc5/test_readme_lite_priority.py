"""The README's lite-topic and priority examples (5.x guide), run as written against a
real `serve --clock virtual` (only the addresses change), each printing what its
`print(...)  # value` lines promise."""
from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("rocketmq.grpc_protocol", reason="needs the grpc extra: ./dev test installs it")

from tests.support.processes import EmulatorProcess  # noqa: E402
from tests.support.readme import for_server, promised, python_blocks, reader_env  # noqa: E402


@pytest.mark.parametrize("marker", ['"Sessions"', '"Tickets"'])
def test_the_example_runs_as_written(tmp_path, marker):
    [block] = [b for b in python_blocks() if marker in b and '"127.0.0.1:8081"' in b]
    server = EmulatorProcess(tmp_path / "store", "--clock", "virtual", grpc=True).start()
    try:
        done = subprocess.run([sys.executable, "-c", for_server(block, server)], capture_output=True, text=True,
                              timeout=90, env=reader_env())
        assert done.returncode == 0, done.stderr[-3000:]
        said = promised(block)
        assert said and done.stdout.split("\n")[:len(said)] == said
    finally:
        server.stop()
