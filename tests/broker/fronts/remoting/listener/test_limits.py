"""Per-connection limits of the TCP front: what one client can make the server hold.

In-process servers (ServerThread) show each limit acting and the well-behaved client
served meanwhile; `serve` subprocesses replay the attacks of issue 17 and read the
server's RSS from /proc. Every wait is bounded; timeouts are configured short.
"""
from __future__ import annotations

import logging
import socket
import struct
import sys
import time

import pytest

from rocketmq_emulator.broker.config import BrokerConfig
from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.fronts.remoting.protocol.typed import FLAG_SUBSCRIPTION, FLAG_SUSPEND
from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode as RQ, ResponseCode as RC
from rocketmq_emulator.broker.fronts.remoting.protocol.codec import encode
from rocketmq_emulator.delay_scheduler import SystemClock, VirtualClock

from tests.support.logs import told
from tests.support.memory import status_mib
from tests.support.processes import EmulatorProcess, wait_for
from tests.support.remoting import RawClient, ServerThread

MiB = 1024 * 1024


def send_request(topic: str, body: bytes, queue_id: int = 0) -> RemotingCommand:
    return RemotingCommand.request(RQ.SEND_MESSAGE_V2, {
        "a": "PG", "b": topic, "c": "TBW102", "d": 1, "e": queue_id, "f": 0, "g": 1, "h": 0, "i": ""}, body)


def pull_request(topic: str, offset: int = 0, *, suspend_ms: int = 0) -> RemotingCommand:
    flags = FLAG_SUBSCRIPTION | (FLAG_SUSPEND if suspend_ms else 0)
    return RemotingCommand.request(RQ.PULL_MESSAGE, {
        "consumerGroup": "G", "topic": topic, "queueId": 0, "queueOffset": offset, "maxMsgNums": 1,
        "sysFlag": flags, "commitOffset": 0, "suspendTimeoutMillis": suspend_ms, "subVersion": 0,
        "subscription": "*"})


def route_request(topic: str = "TBW102") -> RemotingCommand:
    return RemotingCommand.request(RQ.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})


def half_frame(total: int) -> bytes:
    """The first half of a frame of ``total`` bytes (after its length field)."""
    header = b'{"code":310,"flag":0,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":409}'
    head = struct.pack(">ii", total, len(header)) + header
    return head + b"x" * (total // 2 - len(head))


def served(port: int) -> bool:
    """A fresh client gets a route reply: the server is answering."""
    c = RawClient(port, timeout=10)
    try:
        return c.call(route_request()).code == RC.SUCCESS
    finally:
        c.close()


def closed_soon(client: RawClient, timeout: float) -> bool:
    """True once the server closes ``client`` (EOF or reset) within ``timeout`` seconds."""
    client.sock.settimeout(timeout)
    try:
        while True:
            data = client.sock.recv(65536)
            if not data:
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def limit_lines(caplog, word: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "broker.tcp" and word in r.getMessage()]


@pytest.fixture
def start_server(tmp_path):
    made = []

    def start(clock=None, **limits) -> ServerThread:
        core = BrokerCore.open(tmp_path / f"store{len(made)}", clock or SystemClock(), BrokerConfig())
        srv = ServerThread(core, **limits)
        made.append(srv)
        return srv
    yield start
    for srv in made:
        srv.stop()
        srv.core.close()


# -- in process: each limit acts, and logs one line ------------------------------------
def test_unread_replies_stop_the_reading_of_that_connection_only(start_server, caplog):
    caplog.set_level(logging.INFO, logger="broker.tcp")
    srv = start_server(max_outgoing_buffer=2 * MiB)
    producer = RawClient(srv.port)
    assert producer.call(send_request("Big", b"b" * MiB)).code == RC.SUCCESS
    greedy = RawClient(srv.port)
    greedy.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    pulls = [pull_request("Big") for _ in range(200)]
    greedy.send_bytes(b"".join(encode(p) for p in pulls))          # and reads nothing yet

    assert served(srv.port)                                        # everyone else is served meanwhile

    def unread():
        conn = max(srv.server.connections.values(), key=lambda c: c.transport.get_write_buffer_size())
        return conn.transport.get_write_buffer_size()
    # Replies stop being made once 2 MiB wait unread: at most the limit plus one reply.
    assert srv.call_in_loop(unread) <= 2 * MiB + MiB + 4096
    assert len(limit_lines(caplog, "pausing")) == 1
    # Nothing was dropped: reading, the client gets all 200 replies, in order.
    greedy.sock.settimeout(30)
    got = [greedy.recv() for _ in range(200)]
    assert [r.opaque for r in got] == [p.opaque for p in pulls]
    assert all(r.code == RC.SUCCESS and len(r.body) > MiB for r in got)
    greedy.close()
    producer.close()


def test_held_replies_past_twice_the_buffer_close_the_connection(start_server, caplog):
    srv = start_server(max_outgoing_buffer=MiB)
    producer = RawClient(srv.port)
    assert producer.call(send_request("Held", b"0")).code == RC.SUCCESS
    greedy = RawClient(srv.port, rcvbuf=64 * 1024)      # (so the kernel cannot take in most of the 20 MiB)
    # 40 pulls parked at the end of the queue: their replies are tiny until a message comes.
    greedy.send_bytes(b"".join(encode(pull_request("Held", 1, suspend_ms=60_000)) for _ in range(40)))
    wait_for(lambda: srv.call_in_loop(lambda: len(srv.core.holds)) == 40)
    assert producer.call(send_request("Held", b"h" * 512 * 1024)).code == RC.SUCCESS   # 40 x 512 KiB due at once
    # The server writes the 40 replies after (and while) it answers the producer: wait
    # for it to give up on the connection before reading, or this read would drain the
    # replies as they come and keep the unread bytes under the limit.
    wait_for(lambda: limit_lines(caplog, "unread"))
    assert closed_soon(greedy, 10)
    assert len(limit_lines(caplog, "unread")) == 1
    assert served(srv.port)
    producer.close()


def test_a_stalled_frame_is_dropped_in_real_time_on_a_virtual_clock(start_server, caplog):
    srv = start_server(VirtualClock(), frame_timeout_s=0.3)
    stalled = RawClient(srv.port)
    stalled.send_bytes(half_frame(1 * MiB))
    assert served(srv.port)
    assert closed_soon(stalled, 10)
    assert len(limit_lines(caplog, "unfinished")) == 1
    assert srv.call_in_loop(lambda: len(srv.server.connections)) == 0


def test_an_idle_connection_is_closed_but_not_one_with_a_held_pull(start_server, caplog):
    srv = start_server(idle_timeout_s=0.5)
    quiet = RawClient(srv.port)
    assert quiet.call(send_request("Idle", b"x")).code == RC.SUCCESS
    waiting = RawClient(srv.port, timeout=10)
    waiting.send(pull_request("Idle", 1, suspend_ms=2000))          # held 2 s: four idle timeouts
    assert closed_soon(quiet, 10)
    reply = waiting.recv()                                          # answered when the hold ends, not closed
    assert reply.code == RC.PULL_NOT_FOUND
    assert closed_soon(waiting, 10)                                 # then idle like any other
    assert len(limit_lines(caplog, "idle")) == 2


def test_at_the_maximum_silent_connections_make_room_and_busy_ones_refuse(start_server, caplog):
    """Issue 34, item 4: a new connection at the limit closes the oldest one that never
    sent a request; only when every open one has sent a request is the new one refused."""
    srv = start_server(max_connections=3)
    good = RawClient(srv.port)
    assert good.call(route_request()).code == RC.SUCCESS
    silent = [RawClient(srv.port) for _ in range(10)]            # never send a request
    assert all(closed_soon(c, 10) for c in silent[:8])            # each made room for the next
    assert all(c.call(route_request()).code == RC.SUCCESS for c in silent[8:])
    assert good.call(route_request()).code == RC.SUCCESS
    assert len(limit_lines(caplog, "to admit")) == 8
    assert not limit_lines(caplog, "refus")
    late = [RawClient(srv.port) for _ in range(5)]                # all three open ones have sent one now
    assert all(closed_soon(c, 10) for c in late)
    assert len(limit_lines(caplog, "refus")) == 1                 # one line for the burst
    assert all(c.call(route_request()).code == RC.SUCCESS for c in [good, *silent[8:]])
    for c in silent[8:]:
        c.close()
    wait_for(lambda: srv.call_in_loop(lambda: len(srv.server.connections)) == 1)
    assert served(srv.port)                                         # freed slots are usable again
    good.close()


def test_a_connection_that_sends_no_byte_is_closed_after_the_handshake_timeout(start_server, caplog):
    srv = start_server(VirtualClock(), handshake_timeout_s=0.3, frame_timeout_s=30)
    silent = RawClient(srv.port)
    begun = RawClient(srv.port)
    begun.send_bytes(b"\x00\x00")                   # two bytes of a length field: begun, the frame timeout's now
    assert closed_soon(silent, 10)
    assert not closed_soon(begun, 1.0)
    assert len(limit_lines(caplog, "handshake timeout")) == 1
    assert served(srv.port)
    begun.close()


# -- the attacks of issue 17 against `serve`, RSS from /proc --------------------------------
@pytest.fixture
def serve(tmp_path):
    procs = []

    def start(*args: str) -> EmulatorProcess:
        p = EmulatorProcess(tmp_path / f"store{len(procs)}", *args).start()
        procs.append(p)
        return p
    yield start
    for p in procs:
        p.stop()


def test_attack_unread_pulls_of_a_4_mib_message(serve):
    server = serve()
    producer = RawClient(server.port)
    assert producer.call(send_request("Big", b"b" * (4 * MiB))).code == RC.SUCCESS
    assert served(server.port)
    before = status_mib(server.proc.pid)
    greedy = socket.create_connection(("127.0.0.1", server.port))
    greedy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    greedy.sendall(b"".join(encode(pull_request("Big")) for _ in range(400)))   # never read
    assert served(server.port)
    assert served(server.port)
    grown = status_mib(server.proc.pid) - before
    print(f"unread pulls: server RSS {before:.0f} MiB -> +{grown:.0f} MiB")
    assert grown < 120, f"the server grew {grown:.0f} MiB for one connection's unread replies"
    greedy.close()
    producer.close()


def test_attack_stalled_half_frames_are_freed_after_the_frame_timeout(serve):
    server = serve("--frame-timeout", "2")
    assert served(server.port)
    before = status_mib(server.proc.pid)
    stalled = [RawClient(server.port, timeout=30) for _ in range(40)]
    for c in stalled:
        c.send_bytes(half_frame(15 * MiB))
    assert served(server.port)                                      # served while they stall
    peak = status_mib(server.proc.pid) - before
    assert all(closed_soon(c, 30) for c in stalled)
    assert served(server.port)
    after = status_mib(server.proc.pid) - before
    print(f"stalled half frames: server RSS {before:.0f} MiB, +{peak:.0f} MiB while held, +{after:.0f} MiB after")
    assert after < 40, f"{after:.0f} MiB still held after the stalled connections were dropped"
    server.stop()
    assert told(server.proc.stderr.read(), "unfinished") == 40     # told, but not 40 lines at once


def test_attack_silent_connection_flood_cannot_lock_clients_out(serve):
    """Issue 34, item 4: 600 sockets that never send a byte, against 50 allowed. Each new
    one closes the oldest silent one, so a client that arrives during the flood is
    served at once, and those left are closed after the handshake timeout."""
    server = serve("--max-connections", "50", "--handshake-timeout", "2")
    good = RawClient(server.port, timeout=10)
    assert good.call(route_request()).code == RC.SUCCESS
    before = status_mib(server.proc.pid)
    flood = [socket.create_connection(("127.0.0.1", server.port), timeout=10) for _ in range(600)]
    late = RawClient(server.port, timeout=10)                       # a client arriving during the flood
    assert late.call(route_request()).code == RC.SUCCESS
    assert good.call(route_request()).code == RC.SUCCESS

    def closed(s):
        try:
            s.settimeout(10)
            return s.recv(1) == b""
        except (ConnectionResetError, socket.timeout):
            return isinstance(sys.exc_info()[1], ConnectionResetError)
    assert all(closed(s) for s in flood)                            # evicted, or closed after 2 s of silence
    grown = status_mib(server.proc.pid) - before
    print(f"silent connection flood: server RSS {before:.0f} MiB -> +{grown:.0f} MiB")
    for s in flood:
        s.close()
    assert good.call(route_request()).code == RC.SUCCESS
    server.stop()
    err = server.proc.stderr.read()
    assert told(err, "to admit") + told(err, "handshake timeout") == 600
    assert "refusing" not in err
    assert len(err.splitlines()) < 200                              # rate-limited, not a line per socket


def test_attack_connection_flood_over_the_maximum(serve):
    """Once every open connection has sent a request, a flood is refused at once."""
    server = serve("--max-connections", "50")
    clients = [RawClient(server.port, timeout=10) for _ in range(50)]
    assert all(c.call(route_request()).code == RC.SUCCESS for c in clients)
    before = status_mib(server.proc.pid)
    started = time.monotonic()
    flood = []
    for _ in range(600):
        s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        flood.append(s)
    assert clients[0].call(route_request()).code == RC.SUCCESS      # still served during the flood

    def refused(s):
        try:
            s.settimeout(10)
            return s.recv(1) == b""
        except ConnectionResetError:
            return True
    assert all(refused(s) for s in flood)
    grown = status_mib(server.proc.pid) - before
    print(f"connection flood: server RSS {before:.0f} MiB -> +{grown:.0f} MiB")
    for s in flood:
        s.close()
    clients[-1].close()
    wait_for(lambda: served(server.port))                          # a freed slot is usable again
    server.stop()
    # One line for the burst, and one more per 10 s it lasts (a loaded machine may be slow).
    lines = server.proc.stderr.read().count("refusing")
    assert 1 <= lines <= 1 + (time.monotonic() - started) // 10
