"""One `serve` with every front for the fuzzers, its log in a file so each input can be
checked for a traceback as soon as it was answered, and what it must still do after
every hostile input: serve a good client on each front, with memory within a bound."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

from rocketmq_emulator.broker.fronts.pulsar import schema as ps
from rocketmq_emulator.broker.fronts.pulsar.frames import FrameDecoder as PulsarDecoder, encode_simple
from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode, ResponseCode

from tests.support.processes import read_listening, stop_process
from tests.support.remoting import RawClient

__all__ = ["FuzzedServer"]

# What a log must never show, whatever a client sent: Python's own report of an
# exception nobody handled, or one asyncio caught for lack of a handler.
_BROKEN = ("Traceback (most recent call last)", "Task exception was never retrieved", "Exception in callback",
           "Unhandled exception", "Exception ignored")


class FuzzedServer:
    def __init__(self, workdir: Path, *extra: str):
        self.log_path = workdir / "serve.log"
        self._log = open(self.log_path, "w")
        self._read_upto = 0
        self.inputs = Counter()          # inputs sent, per surface (printed for the issue note)
        cmd = [sys.executable, "-m", "rocketmq_emulator.broker.cli", "serve", "--port", "0", "--in-memory",
               "--clock", "virtual", "--log-level", "INFO", *extra]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._log)
        found = read_listening(self.proc, kinds=("remoting", "grpc", "pulsar", "http"))
        self.port = found["remoting"][1]
        self.grpc_port = found["grpc"][1]
        self.pulsar_port = found["pulsar"][1]
        self.http_port = found["http"][1]
        self.start_rss_mb = self.rss_mb()

    # -- what must hold after every input ----------------------------------------------
    def new_log(self) -> str:
        text = self.log_path.read_text(errors="replace")
        new, self._read_upto = text[self._read_upto:], len(text)
        return new

    def assert_unbroken(self, what) -> None:
        """No traceback logged since the last check, the process alive."""
        new = self.new_log()
        broken = [marker for marker in _BROKEN if marker in new]
        assert not broken, f"after {what!r} the log shows {broken}:\n{new[-4000:]}"
        assert self.proc.poll() is None, f"serve exited ({self.proc.returncode}) after {what!r}:\n{new[-4000:]}"

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise AssertionError("no VmRSS")

    def assert_serves_good_clients(self) -> None:
        """A well-formed request on each front is answered as before."""
        c = RawClient(self.port, timeout=10)
        try:
            reply = c.call(RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO))
            assert reply.code == ResponseCode.SUCCESS, reply
        finally:
            c.close()
        status, body = self.http("GET", "/healthz")
        assert status == 200, (status, body)
        with socket.create_connection(("127.0.0.1", self.pulsar_port), timeout=10) as s:
            s.sendall(encode_simple(ps.BaseCommand(type=ps.Type.CONNECT, connect=ps.CommandConnect(
                client_version="fuzz-check", protocol_version=20)).SerializeToString()))
            frames = []
            while not frames:
                data = s.recv(65536)
                assert data, "the Pulsar front closed a good CONNECT"
                frames = PulsarDecoder().feed(data)
            assert ps.BaseCommand.FromString(frames[0].command).type == ps.Type.CONNECTED
        import grpc

        from rocketmq_emulator.broker.fronts.grpc5.stubs import pb, service_grpc, spb
        with grpc.insecure_channel(f"127.0.0.1:{self.grpc_port}") as channel:
            stub = service_grpc.MessagingServiceStub(channel)
            answer = stub.QueryRoute(spb.QueryRouteRequest(topic=pb.Resource(name="TBW102")), timeout=10)
            assert answer.status.code in (pb.Code.OK, pb.Code.TOPIC_NOT_FOUND), answer

    # -- HTTP ---------------------------------------------------------------------------
    def http(self, method: str, path: str, body: bytes | None = None, content_type: str | None = "application/json",
             timeout: float = 10) -> tuple[int, bytes]:
        req = urllib.request.Request(f"http://127.0.0.1:{self.http_port}{path}", data=body, method=method)
        if content_type:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def stop(self) -> dict:
        summary = {"inputs": dict(self.inputs), "rss_mb_start": round(self.start_rss_mb, 1),
                   "rss_mb_end": round(self.rss_mb(), 1) if self.proc.poll() is None else None}
        stop_process(self.proc)
        self._log.close()
        return summary


def wait_closed_or_answered(sock: socket.socket, seconds: float) -> bytes:
    """What a front sent back within ``seconds`` (b'' if it closed the connection)."""
    sock.settimeout(seconds)
    got = b""
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            data = sock.recv(65536)
            if not data:
                break
            got += data
    except (socket.timeout, ConnectionResetError):
        pass
    return got


def dumps(value) -> bytes:
    return json.dumps(value).encode()
