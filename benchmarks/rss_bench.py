#!/usr/bin/env python3
"""The memory of `rocketmq-emulator serve`: over a long produce/consume run, and under
the attacks of issue 17.

The server is a `serve` subprocess (real clock, a fresh store in a temp dir); its
memory is read from /proc: VmRSS, and its two parts RssAnon (the process's own heap)
and RssFile (pages of the commit log it has mapped, which the kernel can take back).

  run (default)   a Producer (send_async, at most --window in flight, 100-byte bodies)
                  and a PushConsumer (CONSUME_SUCCESS) of the SDK over TCP; after every
                  --every messages produced and consumed, one line of the server's RSS
  --attack NAME   unread-pulls: one connection pipelines 400 PULL_MESSAGEs of a 4 MiB
                  message and reads no reply; half-frames: 40 connections each send
                  half of a 15 MiB frame and stall (RSS read again --wait s later);
                  flood: --flood connections opened and held. Each prints the server's
                  RSS before and at its peak, and how long a well-behaved client's
                  request (GET_ROUTEINFO_BY_TOPIC on a connection made before the attack)
                  took meanwhile

--rev REV (repeatable) runs the server from that git revision instead of this work
tree (extracted with `git archive`; WORKTREE names the work tree), one after the
other in the same run, e.g. the commit before a fix and the fix. The client is always
this tree's SDK.

Usage: python benchmarks/rss_bench.py [--n 1000000] [--every 100000] [--rev REV ...]
       python benchmarks/rss_bench.py --attack unread-pulls --attack half-frames
              --attack flood [--flood 5000] [--serve-arg=--frame-timeout=2]
"""
from __future__ import annotations

import argparse
import os
import re
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rocketmq_emulator.broker.processors.pull import FLAG_SUBSCRIPTION  # noqa: E402
from rocketmq_emulator.broker.protocol import RemotingCommand, RequestCode  # noqa: E402
from rocketmq_emulator.broker.protocol.codec import FrameDecoder, encode  # noqa: E402
from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, Message, Producer, PushConsumer, RemoteBroker  # noqa: E402
from tests.support.memory import status_mib  # noqa: E402

MiB = 1024 * 1024
PACKAGES = ("broker", "store", "delay_scheduler", "client_sdk")
# Both forms of serve's start line: "... listening on HOST:PORT (...)" and "listening HOST:PORT remoting".
LISTENING = re.compile(r"listening (?:on )?\S+?:(\d+)")


# -- the server ---------------------------------------------------------------------------------
def tree_of(rev: str, into: Path) -> Path | None:
    """A PYTHONPATH entry holding revision ``rev`` as the rocketmq_emulator package
    (None: this work tree, as installed)."""
    if rev == "WORKTREE":
        return None
    pkg = into / "rocketmq_emulator"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")       # a regular package: found before the editable install
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, *PACKAGES], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(pkg)], input=archive.stdout, check=True)
    return into


class Server:
    """`serve --port 0` on a fresh store, stderr to a file (never a full pipe)."""

    def __init__(self, workdir: Path, serve_args: list[str], pythonpath: Path | None) -> None:
        env = dict(os.environ)
        if pythonpath is not None:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(pythonpath), env.get("PYTHONPATH")]))
        self.stderr = open(workdir / "serve.err", "w+")
        cmd = [sys.executable, "-m", "rocketmq_emulator.broker.cli", "serve", "--port", "0",
               "--data-dir", str(workdir / "store"), "--log-level", "WARNING", *serve_args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.stderr, text=True, env=env)
        for line in self.proc.stdout:
            m = LISTENING.search(line)
            if m:
                self.port = int(m.group(1))
                return
        self.stderr.seek(0)
        raise RuntimeError(f"serve did not start: {self.stderr.read()[-2000:]}")

    def memory(self) -> dict[str, float]:
        """VmRSS, RssAnon, RssFile in MiB."""
        return {field: status_mib(self.proc.pid, field) for field in ("VmRSS", "RssAnon", "RssFile")}

    def rss(self) -> float:
        return status_mib(self.proc.pid)

    def log(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)
        self.stderr.close()


# -- the long run ---------------------------------------------------------------------------------
def produce_consume(server: Server, n: int, every: int, window: int) -> None:
    remote = RemoteBroker(f"127.0.0.1:{server.port}")
    rt = remote.runtime
    producer = Producer("rss_producer", remote).start()
    producer.send(Message("RssBench", b"creates the topic"))
    consumed = [0]

    def listener(msgs, context):
        consumed[0] += len(msgs)
        return CONSUME_SUCCESS

    consumer = PushConsumer("rss_consumer", remote, listener=listener, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe("RssBench", "*")
    consumer.start()
    if not rt.run_until(lambda: consumed[0] >= 1, "60s"):
        raise AssertionError("the consumer got nothing")
    state = {"in_flight": 0, "errors": 0}

    def sent(result, error):
        state["in_flight"] -= 1
        state["errors"] += error is not None

    def window_open():
        return state["in_flight"] < window

    body = b"x" * 100
    base = server.memory()
    print(f"{'messages':>9}  {'VmRSS':>7}  {'RssAnon':>7}  {'RssFile':>7}  {'msgs/s':>7}   (MiB; server)", flush=True)
    print(f"{0:>9}  {base['VmRSS']:7.1f}  {base['RssAnon']:7.1f}  {base['RssFile']:7.1f}", flush=True)
    done = 0
    while done < n:
        t0 = time.perf_counter()
        chunk = min(every, n - done)
        for _ in range(chunk):
            if state["in_flight"] >= window:
                rt.run_until(window_open, "60s")
            state["in_flight"] += 1
            producer.send_async(Message("RssBench", body), sent)
        done += chunk
        if not rt.run_until(lambda: state["in_flight"] == 0 and consumed[0] >= done + 1, "600s"):
            raise AssertionError(f"stalled: {consumed[0] - 1} of {done} consumed, {state['in_flight']} sends open")
        if state["errors"]:
            raise AssertionError(f"{state['errors']} sends failed")
        m = server.memory()
        print(f"{done:>9}  {m['VmRSS']:7.1f}  {m['RssAnon']:7.1f}  {m['RssFile']:7.1f}  "
              f"{chunk / (time.perf_counter() - t0):7.0f}", flush=True)
    consumer.shutdown()
    producer.shutdown()
    remote.close()


# -- the attacks -------------------------------------------------------------------------------------
class Client:
    """A well-behaved client: one connection, made before the attack, one request at a time."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=120)
        self.decoder = FrameDecoder()

    def call(self, cmd: RemotingCommand) -> tuple[RemotingCommand, float]:
        """(the reply, seconds it took)."""
        t0 = time.perf_counter()
        self.sock.sendall(encode(cmd))
        while True:
            data = self.sock.recv(1 << 20)
            if not data:
                raise ConnectionError("closed by the server")
            for reply in self.decoder.feed(data):
                return reply, time.perf_counter() - t0

    def close(self) -> None:
        self.sock.close()


def route() -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"})


def peak_rss(server: Server, seconds: float) -> float:
    """Highest RSS seen over ``seconds`` (sampled every 50 ms)."""
    top, end = 0.0, time.monotonic() + seconds
    while time.monotonic() < end:
        top = max(top, server.rss())
        time.sleep(0.05)
    return top


def peer_closed(s: socket.socket, timeout: float) -> bool:
    s.settimeout(timeout)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def unread_pulls(server: Server, args) -> dict:
    send = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {
        "a": "PG", "b": "Big", "c": "TBW102", "d": 1, "e": 0, "f": 0, "g": 1, "h": 0, "i": ""}, b"b" * (4 * MiB))
    client = Client(server.port)
    reply, _ = client.call(send)
    assert reply.code == 0, reply
    base = server.rss()
    greedy = socket.create_connection(("127.0.0.1", server.port))
    greedy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    pull = {"consumerGroup": "G", "topic": "Big", "queueId": 0, "queueOffset": 0, "maxMsgNums": 1,
            "sysFlag": FLAG_SUBSCRIPTION, "commitOffset": 0, "suspendTimeoutMillis": 0, "subVersion": 0,
            "subscription": "*"}
    greedy.sendall(b"".join(encode(RemotingCommand.request(RequestCode.PULL_MESSAGE, pull)) for _ in range(400)))
    _, latency = client.call(route())
    peak = peak_rss(server, args.wait)
    greedy.close()
    client.close()
    return {"base": base, "peak": peak, "route_s": latency}


def half_frames(server: Server, args) -> dict:
    client = Client(server.port)
    base = server.rss()
    header = b'{"code":310,"flag":0,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":409}'
    total = 15 * MiB
    head = struct.pack(">ii", total, len(header)) + header
    half = head + b"x" * (total // 2 - len(head))
    socks = []
    for _ in range(40):
        s = socket.create_connection(("127.0.0.1", server.port))
        s.sendall(half)
        socks.append(s)
    _, latency = client.call(route())
    peak = peak_rss(server, 1)
    time.sleep(args.wait)
    later = server.rss()
    closed = sum(peer_closed(s, 0.2) for s in socks)
    for s in socks:
        s.close()
    client.close()
    return {"base": base, "peak": peak, f"after {args.wait:g} s": later, "closed by the server": closed,
            "route_s": latency}


def flood(server: Server, args) -> dict:
    client = Client(server.port)
    base = server.rss()
    socks = [socket.create_connection(("127.0.0.1", server.port), timeout=30) for _ in range(args.flood)]
    _, latency = client.call(route())
    peak = peak_rss(server, 1)
    held = sum(not peer_closed(s, 0.05) for s in socks)
    for s in socks:
        s.close()
    client.close()
    return {"base": base, "peak": peak, "held open": held, "route_s": latency}


ATTACKS = {"unread-pulls": unread_pulls, "half-frames": half_frames, "flood": flood}


def show(figures: dict) -> str:
    parts = []
    for k, v in figures.items():
        if k == "route_s":
            parts.append(f"well-behaved request {v * 1000:.0f} ms")
        elif isinstance(v, float):
            parts.append(f"{k} {v:.0f} MiB")
        else:
            parts.append(f"{k} {v}")
    return ", ".join(parts)


def main() -> int:
    p = argparse.ArgumentParser(description="The memory of `serve` over a long run and under attack.")
    p.add_argument("--n", type=int, default=1_000_000, help="messages produced and consumed (default 1,000,000)")
    p.add_argument("--every", type=int, default=100_000, help="print RSS after this many (default 100,000)")
    p.add_argument("--window", type=int, default=32, help="sends in flight (default 32)")
    p.add_argument("--attack", action="append", choices=sorted(ATTACKS), help="run an attack instead (repeatable)")
    p.add_argument("--flood", type=int, default=5000, help="connections the flood opens (default 5000)")
    p.add_argument("--wait", type=float, default=5.0, help="seconds RSS is watched after an attack (default 5)")
    p.add_argument("--serve-arg", action="append", default=[], help="an extra `serve` argument (repeatable)")
    p.add_argument("--rev", action="append", help="git revision the server runs (repeatable; default WORKTREE)")
    args = p.parse_args()
    for rev in args.rev or ["WORKTREE"]:
        with tempfile.TemporaryDirectory(prefix="rss-bench-") as tmp:
            code = tree_of(rev, Path(tmp) / "code")
            print(f"== server: {rev}{' ' + ' '.join(args.serve_arg) if args.serve_arg else ''}", flush=True)
            for name in args.attack or ["run"]:
                workdir = Path(tempfile.mkdtemp(dir=tmp))
                server = Server(workdir, args.serve_arg, code)
                try:
                    if name == "run":
                        produce_consume(server, args.n, args.every, args.window)
                    else:
                        print(f"{name:13} {show(ATTACKS[name](server, args))}", flush=True)
                finally:
                    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
