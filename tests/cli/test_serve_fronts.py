"""`serve`'s listeners beside the remoting one — the RocketMQ 5.x gRPC front, the
Pulsar front and the HTTP front (health, metrics) — each announced like the others (a free port with --port 0), turned off
with --no-NAME (a usage error with --NAME-port), and a port it cannot have is one line,
exit 2, nothing left on disk."""
from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys

import pytest

from ..support.cli_run import one_error_line, run_cli
from ..support.processes import read_listening

# (name, how the error line names it, its default port, a module its extra installs)
FRONTS = [("grpc", "gRPC", 8081, "rocketmq.grpc_protocol"), ("pulsar", "Pulsar", 6650, "google_crc32c"),
          ("http", "HTTP", 8080, "aiohttp")]


def _needs(module: str):
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        found = False
    return pytest.mark.skipif(not found, reason=f"needs {module}: ./dev test installs it")


FRONT_PARAMS = [pytest.param(name, label, port, marks=_needs(module), id=name) for name, label, port, module in FRONTS]


def serve(*args):
    return subprocess.Popen([sys.executable, "-m", "rocketmq_emulator.broker.cli", "serve", "--log-level", "WARNING",
                             "--in-memory", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.parametrize("name, label, default", FRONT_PARAMS)
def test_port_0_gives_the_listener_a_free_port_and_announces_it(name, label, default):
    others = [f"--no-{n}" for n, *_ in FRONTS if n != name]
    proc = serve("--port", "0", *others)
    try:
        found = read_listening(proc, kinds=("remoting", name))
        port = found[name][1]
        assert port not in (0, default, found["remoting"][1])
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err


@pytest.mark.parametrize("name, label, default", FRONT_PARAMS)
def test_no_front_leaves_it_off_and_with_its_port_is_a_usage_error(name, label, default):
    proc = serve("--port", "0", f"--no-{name}")
    try:
        read_listening(proc)
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=15)
    assert f" {name}".encode() not in out and proc.returncode == 0
    done = run_cli("serve", "--in-memory", f"--no-{name}", f"--{name}-port", "9000", timeout=20)
    assert done.returncode == 2 and f"--no-{name}" in one_error_line(done.stderr, "serve")


@pytest.mark.parametrize("name, label, default", FRONT_PARAMS)
def test_a_busy_port_is_one_line_exit_2_and_the_new_store_is_taken_back(tmp_path, name, label, default):
    data_dir = tmp_path / "store"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = run_cli("serve", "--port", "0", f"--{name}-port", str(port), "--data-dir", str(data_dir), timeout=20)
    assert done.returncode == 2, done.stderr
    line = one_error_line(done.stderr, "serve")
    assert f"cannot listen on 127.0.0.1:{port} ({label})" in line
    # the options that move or disable that front, and free ports for every one
    assert f"--{name}-port N" in line and f"--no-{name}" in line and "--port 0" in line, line
    assert not data_dir.exists()
