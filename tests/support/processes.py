"""Real processes for tests: a free 127.0.0.1 port, a mosquitto (Debian package, installed
by ./dev) with TCP_NODELAY, and `rocketmq-emulator serve` in a subprocess."""
from __future__ import annotations

import getpass
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.02)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port} after {timeout}s")


class Mosquitto:
    """mosquitto on a free port; ``acl`` (mosquitto acl_file text, applied to anonymous
    clients) can be changed while it runs with ``set_acl`` (SIGHUP reloads it)."""

    def __init__(self, workdir: Path, acl: str | None = None):
        self.port = free_port()
        self.conf = workdir / "mosquitto.conf"
        self.acl_file = workdir / "mosquitto.acl"
        lines = (f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\n"
                 "log_dest stderr\nlog_type error\nmax_inflight_messages 0\n"
                 "max_queued_messages 100000\nset_tcp_nodelay true\n")
        if acl is not None:
            self.acl_file.write_text(acl)
            # Started as root, mosquitto drops to user "mosquitto", which cannot read a
            # file in pytest's private tmp dir: stay the user that runs the tests.
            lines += f"acl_file {self.acl_file}\nuser {getpass.getuser()}\n"
        self.conf.write_text(lines)
        self.proc = None

    def start(self):
        if not os.path.exists(MOSQUITTO):
            pytest.fail("mosquitto is not installed; run ./dev test, which installs it")
        self.proc = subprocess.Popen([MOSQUITTO, "-c", str(self.conf)], stderr=subprocess.DEVNULL)
        wait_port(self.port)

    def set_acl(self, acl: str):
        """Replace the ACL; mosquitto rereads it on SIGHUP (asynchronously: callers
        check the effect, e.g. by a publish that must now pass)."""
        self.acl_file.write_text(acl)
        self.proc.send_signal(signal.SIGHUP)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.proc = None


LISTENING = re.compile(r"^listening (\S+):(\d+) ([\w-]+)$")


def read_listening(proc: subprocess.Popen, timeout: float = 20.0,
                   kinds: tuple[str, ...] = ("remoting",)) -> dict[str, tuple[str, int]]:
    """Read `serve`'s stdout up to its machine-readable ``listening HOST:PORT KIND`` lines
    of every one of ``kinds``, bounded by ``timeout``: {kind: (host, port)}. Reads the pipe's bytes directly
    (a text wrapper's buffer would hide a second line from select); the lines before it
    are kept in ``proc.lines_before`` (the human start line)."""
    fd = proc.stdout.fileno()
    buf, before, found = b"", [], {}
    deadline = time.monotonic() + timeout
    while not set(kinds) <= set(found):
        while b"\n" not in buf:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(fd, 4096) if ready else None
            if not chunk:
                if chunk is not None:                 # end of output: serve exited
                    proc.wait(10)
                err = proc.stderr.read() if proc.poll() is not None and proc.stderr else ""
                raise RuntimeError(f"serve printed no `listening` line within {timeout} s: "
                                   f"{before!r} {buf!r} {err}")
            buf += chunk
        raw, buf = buf.split(b"\n", 1)
        line = raw.decode()
        m = LISTENING.match(line)
        if m:
            found[m.group(3)] = (m.group(1), int(m.group(2)))
        else:
            before.append(line)
    proc.lines_before = before
    return found


class EmulatorProcess:
    """`rocketmq-emulator serve` in its own process, port read from its `listening` line."""

    def __init__(self, data_dir: Path, *args: str, grpc: bool = False, pulsar: bool = False, brokers: int = 1,
                 http: bool = False):
        self.data_dir = data_dir
        self.args = args
        self.brokers = brokers
        self.http = http
        self.http_port = None
        self.broker_ports: dict[str, int] = {}
        self.grpc = grpc
        self.pulsar = pulsar
        self.proc = None
        self.port = None
        self.grpc_port = None
        self.pulsar_port = None

    def start(self):
        cmd = [sys.executable, "-m", "rocketmq_emulator.broker.cli", "serve", "--port", "0", "--data-dir", str(self.data_dir),
               "--log-level", "WARNING", *self.args]
        if not self.grpc:
            cmd.append("--no-grpc")
        if not self.pulsar:
            cmd.append("--no-pulsar")
        if not self.http:
            cmd.append("--no-http")
        names = [f"broker-{chr(ord('a') + i)}" for i in range(self.brokers)]
        if self.brokers > 1:
            cmd += ["--brokers", str(self.brokers)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        kinds = ("remoting",) + (("grpc",) if self.grpc else ()) + (("pulsar",) if self.pulsar else ()) + \
            (("http",) if self.http else ())
        found = read_listening(self.proc, kinds=kinds + tuple(names[1:]))
        self.port = found["remoting"][1]
        self.broker_ports = {names[0]: self.port, **{n: found[n][1] for n in names[1:]}}
        self.grpc_port = found["grpc"][1] if self.grpc else None
        self.pulsar_port = found["pulsar"][1] if self.pulsar else None
        self.http_port = found["http"][1] if self.http else None
        return self

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(15)


def stop_process(proc: subprocess.Popen | None, grace: float = 15.0) -> None:
    """Ask a process to stop (SIGTERM) and kill it if it is still there after ``grace``
    seconds: a test's server never outlives the test, even one that ignores SIGTERM."""
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def wait_for(predicate, timeout: float = 10.0, interval: float = 0.02):
    """Bounded polling for a condition another process or thread brings about: the
    predicate's first truthy value, or AssertionError once ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    value = predicate()
    if value:
        return value
    raise AssertionError(f"condition not met within {timeout} s")
