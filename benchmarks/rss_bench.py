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
                  flood: --flood connections opened that never send a byte, and a
                  client arriving during the flood. Each prints the server's
                  RSS before and at its peak, and how long a well-behaved client's
                  request (GET_ROUTEINFO_BY_TOPIC on a connection made before the attack)
                  took meanwhile. Issue 34, the other fronts:
                  pulsar-stalled: a --backlog-mib backlog (50), then --stalled consumers (8)
                  that FLOW 1,000,000 permits and read nothing, and then one that reads it
                  all (how long it took); pulsar-half-frames: 20 connections CONNECT
                  and send half of a 5 MiB frame; pulsar-flood: --flood sockets that never
                  CONNECT; http-flood: --flood idle sockets on the HTTP port;
                  http-stalled: 20 POSTs of 1 MiB stuck half way. Each says whether a
                  client arriving meanwhile was served, and the RSS --wait s later.
                  Issue 46: pulsar-partitions: PUT .../partitions of --partitions (a
                  count past the bound), then, only if that was refused, 2^63 (a server
                  without the bound loops until the kernel kills it) and POST
                  .../partitions of --partitions: the answers, how long each took and
                  a /healthz asked 0.2 s into it, and the RSS
                  Issue 46: grpc-flood: --flood sockets that never send a byte to the
                  gRPC port, each reopened once a second after the server closes it, and
                  max(--wait, 10) good 5.x calls (a QueryRoute on a fresh channel, 2 s
                  deadline), one a second: how many were served. (The nearly full disk
                  is benchmarks/nearly_full_disk.py: it needs a tmpfs.)

--rev REV (repeatable) runs the server from that git revision instead of this work
tree (extracted with `git archive`; WORKTREE names the work tree), one after the
other in the same run, e.g. the commit before a fix and the fix. The client is always
this tree's SDK.

Usage: python benchmarks/rss_bench.py [--n 1000000] [--every 100000] [--rev REV ...]
       python benchmarks/rss_bench.py --attack unread-pulls --attack half-frames
              --attack flood [--flood 5000] [--serve-arg=--frame-timeout=2]
       python benchmarks/rss_bench.py --rev 90deaa8 --rev WORKTREE --attack flood --attack pulsar-stalled
              --attack pulsar-half-frames --attack pulsar-flood --attack http-flood --attack http-stalled
              --flood 1000 --wait 12 --serve-arg=--frame-timeout=2
       python benchmarks/rss_bench.py --rev 05e806b --rev WORKTREE --attack pulsar-stalled --stalled 400
              --backlog-mib 50 --attack pulsar-partitions --partitions 1000000
"""
from __future__ import annotations

import argparse
import os
import re
import selectors
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rocketmq_emulator.broker.fronts.remoting.protocol.typed import FLAG_SUBSCRIPTION  # noqa: E402
from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode  # noqa: E402
from rocketmq_emulator.broker.fronts.remoting.protocol.codec import FrameDecoder, encode  # noqa: E402
from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, Message, Producer, PushConsumer, RemoteBroker  # noqa: E402
from tests.support.memory import status_mib  # noqa: E402
from tests.support.sockets import closed_soon  # noqa: E402

MiB = 1024 * 1024
PACKAGES = ("broker", "store", "delay_scheduler", "client_sdk")
# serve's machine-readable lines: "listening HOST:PORT KIND" (remoting, grpc, pulsar, http)
LISTENING = re.compile(r"^listening \S+:(\d+) ([\w-]+)$")


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
        self.ports: dict[str, int] = {}
        for line in self.proc.stdout:          # the http line comes last (the fronts are on: the extras are in)
            m = LISTENING.match(line.strip())
            if m:
                self.ports[m.group(2)] = int(m.group(1))
                if m.group(2) == "http" or "--no-http" in serve_args and m.group(2) == "remoting":
                    self.port = self.ports["remoting"]
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
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:  # (one still busy in a loop an attack started)
                self.proc.kill()
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
    client = Client(server.port)            # made and used before the flood: how long a request takes meanwhile
    client.call(route())
    figures = _front_flood(server, args, server.port, lambda: Client(server.port).call(route())[0].code == 0,
                           during=lambda: {"route_s": client.call(route())[1]})
    client.close()
    return figures


def still_open(socks: list[socket.socket], timeout: float = 0.2) -> int:
    """How many of ``socks`` the server has not closed, all looked at together (one at a
    time, the looking would take longer than the timeouts being measured)."""
    sel = selectors.DefaultSelector()
    for c in socks:
        sel.register(c, selectors.EVENT_READ)
    closed = 0
    for key, _ in sel.select(timeout):
        try:
            closed += key.fileobj.recv(1 << 16) == b""
        except ConnectionResetError:
            closed += 1
    sel.close()
    return len(socks) - closed


def served(attempt) -> str:
    """What a client arriving during an attack gets: "served" or why not."""
    try:
        return "served" if attempt() else "refused"
    except OSError as exc:
        return f"not served ({type(exc).__name__})"


# -- issue 34: the Pulsar and HTTP fronts ------------------------------------------------------------
def _pulsar_frames():
    import rocketmq_emulator.broker.fronts.pulsar.schema as s
    from rocketmq_emulator.broker.fronts.pulsar.frames import encode_payload, encode_simple

    def simple(**fields) -> bytes:
        return encode_simple(s.BaseCommand(**fields).SerializeToString())

    def send(seq: int, payload: bytes) -> bytes:
        cmd = s.BaseCommand(type=s.Type.SEND, send={"producer_id": 1, "sequence_id": seq}).SerializeToString()
        meta = s.MessageMetadata(producer_name="bench", sequence_id=seq, publish_time=1).SerializeToString()
        return encode_payload(cmd, meta, payload)
    connect = simple(type=s.Type.CONNECT, connect={"client_version": "rss-bench", "protocol_version": 20})
    return s, simple, send, connect


def _pulsar_replies(sock: socket.socket, n: int) -> list:
    import rocketmq_emulator.broker.fronts.pulsar.schema as s
    from rocketmq_emulator.broker.fronts.pulsar.frames import FrameDecoder as PulsarDecoder

    decoder, got = PulsarDecoder(64 * MiB), []
    while len(got) < n:
        data = sock.recv(1 << 20)
        if not data:
            raise ConnectionError("closed by the server")
        got += [s.BaseCommand.FromString(f.command) for f in decoder.feed(data)]
    return got


def _pulsar_client_served(port: int) -> bool:
    s, simple, _, connect = _pulsar_frames()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(connect + simple(type=s.Type.PING, ping={}))
        return [c.type for c in _pulsar_replies(sock, 2)] == [s.Type.CONNECTED, s.Type.PONG]


def pulsar_stalled(server: Server, args) -> dict:
    s, simple, send, connect = _pulsar_frames()
    port = server.ports["pulsar"]
    topic = "persistent://public/default/backlog"
    producer = socket.create_connection(("127.0.0.1", port), timeout=60)
    producer.sendall(connect + simple(type=s.Type.PRODUCER, producer={"topic": topic, "producer_id": 1,
                                                                       "request_id": 1}))
    _pulsar_replies(producer, 2)
    messages = args.backlog_mib * 4                         # 256 KiB each
    for seq in range(messages):
        producer.sendall(send(seq, bytes(256 * 1024)))
        _pulsar_replies(producer, 1)
    producer.close()
    base, heap_base = server.rss(), server.memory()["RssAnon"]

    def consumer(name: str, permits: int, rcvbuf: int | None) -> socket.socket:
        c = socket.socket()
        if rcvbuf:
            c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        c.settimeout(300)
        c.connect(("127.0.0.1", port))
        c.sendall(connect + simple(type=s.Type.SUBSCRIBE, subscribe={
            "topic": topic, "subscription": name, "consumer_id": 1, "request_id": 1,
            "subType": s.SubType.Exclusive, "initialPosition": s.InitialPosition.Earliest})
            + simple(type=s.Type.FLOW, flow={"consumer_id": 1, "messagePermits": permits}))
        return c
    stalled = [consumer(f"stalled-{i}", 1_000_000, 64 * 1024) for i in range(args.stalled)]
    late = served(lambda: _pulsar_client_served(port))
    peak = peak_rss(server, args.wait)
    heap = server.memory()["RssAnon"]
    t0 = time.perf_counter()
    reader = consumer("reader", messages, None)
    try:
        got = sum(c.type == s.Type.MESSAGE for c in _pulsar_replies(reader, messages + 2))
        reading = f"{got} of {messages} in {time.perf_counter() - t0:.1f} s"
    except OSError as exc:
        reading = f"stopped ({type(exc).__name__})"
    reader.close()
    for c in stalled:
        c.close()
    time.sleep(1)
    return {"stalled": args.stalled, "backlog MiB": args.backlog_mib, "base": base, "peak": peak,
            "heap (RssAnon) base": heap_base, f"heap after {args.wait:g} s": heap, "late client": late,
            "a reader got": reading, "after closing them": server.rss()}


def _timed_http(port: int, method: str, path: str, body: bytes | None = None,
                timeout: float = 300) -> tuple[str, float]:
    """(the status, or why there was none; seconds it took)."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method=method)
    if body is not None:
        request.add_header("Content-Type", "application/json")
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status = str(response.status)
    except urllib.error.HTTPError as exc:
        status = str(exc.code)
    except OSError as exc:
        status = f"no answer ({type(exc).__name__})"
    return status, time.perf_counter() - t0


def pulsar_partitions(server: Server, args) -> dict:
    port = server.ports["http"]
    path = "/admin/v2/persistent/public/default/big/partitions"
    base = server.rss()
    out: dict = {"base": base}

    def attempt(label: str, method: str, count: int, where: str = path) -> str:
        import threading

        answer: list = []
        asking = threading.Thread(target=lambda: answer.append(_timed_http(port, method, where, str(count).encode())))
        asking.start()
        time.sleep(0.2)                     # /healthz asked while the request is (or was) being served
        health, health_took = _timed_http(port, "GET", "/healthz")
        asking.join()
        status, took = answer[0]
        out[label] = f"{status} in {took * 1000:.0f} ms, /healthz meanwhile {health} in {health_took * 1000:.0f} ms"
        return status
    first = attempt(f"PUT {args.partitions}", "PUT", args.partitions)
    if first.startswith("4"):               # (a server that took it would loop on 2^63 until killed)
        attempt("PUT 2^63", "PUT", 1 << 63)
        _timed_http(port, "PUT", "/admin/v2/persistent/public/default/grown/partitions", b"2")
        attempt(f"POST {args.partitions}", "POST", args.partitions,
                "/admin/v2/persistent/public/default/grown/partitions")
    else:
        out["PUT 2^63"] = "not sent: the first count was taken"
    out["after"] = server.rss()
    return out


def pulsar_half_frames(server: Server, args) -> dict:
    s, simple, send, connect = _pulsar_frames()
    port = server.ports["pulsar"]
    base = server.rss()
    half = send(0, bytes(5 * MiB))[:(5 * MiB) // 2]
    socks = []
    for _ in range(20):
        c = socket.create_connection(("127.0.0.1", port), timeout=30)
        c.sendall(connect + half)
        socks.append(c)
    return _watch_stalled(server, args, base, socks, lambda: _pulsar_client_served(port))


def _watch_stalled(server: Server, args, base: float, socks: list[socket.socket], late_client) -> dict:
    """After stalled connections were opened: a client arriving now, the peak, and the
    RSS and the connections closed --wait s later."""
    late = served(late_client)
    peak = peak_rss(server, 1)
    time.sleep(args.wait)
    later = server.rss()
    closed = sum(closed_soon(c, 0.2) for c in socks)
    for c in socks:
        c.close()
    return {"base": base, "peak": peak, "late client": late, f"after {args.wait:g} s": later,
            "closed by the server": closed}


def _front_flood(server: Server, args, port: int, late_client, during=dict) -> dict:
    """--flood sockets that never send a byte to ``port``; ``during()``: more figures taken
    as soon as they are open."""
    base = server.rss()
    socks = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(args.flood)]
    extra = during()
    late = served(late_client)
    peak = peak_rss(server, 1)
    held = still_open(socks)
    time.sleep(args.wait)
    later = server.rss()
    held_later = still_open(socks)
    for c in socks:
        c.close()
    return {"base": base, "peak": peak, "held open": held, "late client": late, f"after {args.wait:g} s": later,
            f"held open after {args.wait:g} s": held_later, **extra}


def pulsar_flood(server: Server, args) -> dict:
    port = server.ports["pulsar"]
    return _front_flood(server, args, port, lambda: _pulsar_client_served(port))


def _http_get_ok(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
        c.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
        return c.recv(100).startswith(b"HTTP/1.1 200")


def http_flood(server: Server, args) -> dict:
    port = server.ports["http"]
    return _front_flood(server, args, port, lambda: _http_get_ok(port))


def http_stalled(server: Server, args) -> dict:
    port = server.ports["http"]
    base = server.rss()
    head = (f"POST /api/dlq/redrive HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {MiB}\r\n\r\n").encode()
    socks = []
    for _ in range(20):
        c = socket.create_connection(("127.0.0.1", port), timeout=30)
        c.sendall(head + b"x" * (MiB // 2))
        socks.append(c)
    return _watch_stalled(server, args, base, socks, lambda: _http_get_ok(port))


# -- issue 46: the gRPC front's silent sockets --------------------------------------------------------
def _grpc_route_ok(port: int) -> bool:
    """A 5.x client arriving now (a fresh channel): its QueryRoute answered within 2 s."""
    import grpc
    from rocketmq.grpc_protocol import definition_pb2 as pb, service_pb2 as spb, service_pb2_grpc

    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        try:
            reply = service_pb2_grpc.MessagingServiceStub(channel).QueryRoute(
                spb.QueryRouteRequest(topic=pb.Resource(name="TBW102")), timeout=2)
        except grpc.RpcError:
            return False
    return reply.status.code == pb.OK


def grpc_flood(server: Server, args) -> dict:
    """--flood sockets that never send a byte to the gRPC port, each reopened as soon as
    the server closes it (checked every second), and a good 5.x call a second meanwhile."""
    port = server.ports["grpc"]
    base = server.rss()
    socks = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(args.flood)]
    calls = max(int(args.wait), 10)
    good, top, reopened = 0, base, 0
    for _ in range(calls):
        started = time.monotonic()
        good += _grpc_route_ok(port)
        top = max(top, server.rss())
        sel = selectors.DefaultSelector()
        for c in socks:
            sel.register(c, selectors.EVENT_READ)
        closed = set()
        for key, _ in sel.select(0.05):
            try:
                if key.fileobj.recv(1 << 16) == b"":
                    closed.add(key.fileobj)
            except ConnectionResetError:
                closed.add(key.fileobj)
        sel.close()
        for i, c in enumerate(socks):
            if c in closed:
                c.close()
                socks[i] = socket.create_connection(("127.0.0.1", port), timeout=30)
                reopened += 1
        time.sleep(max(0.0, 1 - (time.monotonic() - started)))
    held = still_open(socks)
    for c in socks:
        c.close()
    return {"base": base, "peak": top, "good 5.x calls served": f"{good} of {calls}",
            "silent sockets reopened": reopened, "held open at the end": held}


ATTACKS = {"unread-pulls": unread_pulls, "half-frames": half_frames, "flood": flood, "pulsar-stalled": pulsar_stalled,
           "pulsar-half-frames": pulsar_half_frames, "pulsar-flood": pulsar_flood, "http-flood": http_flood,
           "http-stalled": http_stalled, "pulsar-partitions": pulsar_partitions, "grpc-flood": grpc_flood}


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
    p.add_argument("--stalled", type=int, default=8, help="pulsar-stalled: consumers that read nothing (default 8)")
    p.add_argument("--backlog-mib", type=int, default=50, help="pulsar-stalled: the backlog in MiB (default 50)")
    p.add_argument("--partitions", type=int, default=1_000_000,
                   help="pulsar-partitions: the count asked for (default 1,000,000)")
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
                        print(f"{name:18} {show(ATTACKS[name](server, args))}", flush=True)
                finally:
                    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
