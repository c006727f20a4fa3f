"""The broker takes the official stubs from the 5.x client package without starting that
client (which would create ~/logs/rocketmq_python), and a client in the same process
still works and shares the very same stub modules."""
import subprocess
import sys

import pytest

pytest.importorskip("rocketmq.grpc_protocol", reason="needs the grpc extra: ./dev test installs it")

PROBE = """
import os, sys
import rocketmq_emulator.broker.fronts.grpc5.stubs as stubs
print(os.path.exists(os.path.expanduser("~/logs")))
from rocketmq import Producer
import rocketmq.grpc_protocol.definition_pb2 as d
print(Producer.__name__, d is stubs.pb)
"""


def test_the_stubs_come_without_the_clients_side_effects(tmp_path):
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60,
                          env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "Producer", "True"]
