"""What one client can make the Pulsar front hold (issue 34, item 2): a consumer that asks
for a million messages and reads none, sockets that never CONNECT, stalled half frames,
idle and surplus connections. In-process listeners on a loop thread with short limits,
raw sockets speaking the frames; `serve` subprocesses for the attack as reported, with
the server's RSS read from /proc. Every wait is bounded."""
from __future__ import annotations

import asyncio
import logging
import socket
import struct
import threading

import pytest

pytest.importorskip("google_crc32c", reason="needs the pulsar extra: ./dev test installs it")

from rocketmq_emulator.broker.adapters.connection_guard import ConnectionLimits  # noqa: E402
from rocketmq_emulator.broker.fronts.pulsar.listener import PulsarServer  # noqa: E402
from rocketmq_emulator.broker.core import BrokerCore  # noqa: E402
from rocketmq_emulator.broker.operations import SendRequest  # noqa: E402
from rocketmq_emulator.broker.fronts.pulsar import schema as s  # noqa: E402
from rocketmq_emulator.broker.fronts.pulsar.frames import FrameDecoder, encode_payload, encode_simple  # noqa: E402
from rocketmq_emulator.delay_scheduler import SystemClock  # noqa: E402

from tests.support.memory import status_mib  # noqa: E402
from tests.support.processes import EmulatorProcess, wait_for  # noqa: E402

MiB = 1024 * 1024
TOPIC = "persistent://public/default/backlog"
STORED = "pulsar|public|default|backlog"


def frame(**fields) -> bytes:
    return encode_simple(s.BaseCommand(**fields).SerializeToString())


CONNECT = frame(type=s.Type.CONNECT, connect={"client_version": "raw", "protocol_version": 20})


def subscribe(name: str, consumer_id: int = 1, topic: str = TOPIC) -> bytes:
    return frame(type=s.Type.SUBSCRIBE, subscribe={"topic": topic, "subscription": name, "consumer_id": consumer_id,
                                                   "request_id": consumer_id, "subType": s.SubType.Exclusive,
                                                   "initialPosition": s.InitialPosition.Earliest})


def flow(permits: int, consumer_id: int = 1) -> bytes:
    return frame(type=s.Type.FLOW, flow={"consumer_id": consumer_id, "messagePermits": permits})


class Raw:
    """A raw Pulsar connection with bounded reads."""

    def __init__(self, port: int, rcvbuf: int | None = None) -> None:
        self.sock = socket.socket()
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(10)
        self.sock.connect(("127.0.0.1", port))
        self.decoder = FrameDecoder(64 * MiB)
        self.frames: list = []

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read(self, n: int) -> list:
        """The next ``n`` frames (as (BaseCommand, Frame))."""
        while len(self.frames) < n:
            data = self.sock.recv(1 << 20)
            if not data:
                raise ConnectionError("closed by the server")
            self.frames += [(s.BaseCommand.FromString(f.command), f) for f in self.decoder.feed(data)]
        out, self.frames = self.frames[:n], self.frames[n:]
        return out

    def closed_soon(self, timeout: float) -> bool:
        self.sock.settimeout(timeout)
        try:
            while data := self.sock.recv(1 << 20):
                self.decoder.feed(data)
            return True
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False

    def close(self) -> None:
        self.sock.close()


class Listener:
    """A PulsarServer on a loop thread of its own; ``on_loop(fn)`` runs fn there."""

    def __init__(self, limits: ConnectionLimits, **options) -> None:
        """``options``: PulsarServer's others (max_pending_bytes)."""
        self.core = BrokerCore.in_memory(SystemClock())
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server = PulsarServer(self.core, "127.0.0.1", 0, lambda: None, limits=limits, **options)
        asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result(10)
        self.port = self.server.port

    def on_loop(self, fn):
        async def call():
            return fn()
        return asyncio.run_coroutine_threadsafe(call(), self.loop).result(10)

    def store(self, n: int, size: int) -> None:
        def put():
            self.core.topics.create_system(STORED, 1, 6)
            for i in range(n):
                body = b"%08d" % i + bytes(size - 8)
                assert self.core.send(SendRequest("", STORED, body, 0, {}), self.core.connect()).queue_offset == i
        self.on_loop(put)

    def unsent(self) -> list[int]:
        """Per open connection: its write buffer and the frames queued for it."""
        return self.on_loop(lambda: [p.transport.get_write_buffer_size() + sum(map(len, p.conn.outgoing))
                                     for p in self.server.connections])

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture
def listen():
    made = []

    def start(max_pending_bytes=None, **limits) -> Listener:
        options = {} if max_pending_bytes is None else {"max_pending_bytes": max_pending_bytes}
        made.append(Listener(ConnectionLimits(**limits), **options))
        return made[-1]
    yield start
    for one in made:
        one.stop()


def lines(caplog, word: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "broker.pulsar" and word in r.getMessage()]


def test_a_consumer_that_reads_nothing_is_pushed_no_more_than_the_bound_and_then_all_of_it(listen):
    srv = listen(max_outgoing_buffer=4 * MiB)               # messages stop at a quarter of it: 1 MiB
    srv.store(100, 256 * 1024)                              # a 25 MiB backlog
    greedy = Raw(srv.port, rcvbuf=64 * 1024)
    greedy.send(CONNECT + subscribe("greedy") + flow(1_000_000))
    assert [c.type for c, _ in greedy.read(2)] == [s.Type.CONNECTED, s.Type.SUCCESS]
    polite = Raw(srv.port)                                  # served meanwhile, on its own subscription
    polite.send(CONNECT + subscribe("polite") + flow(3))
    got = polite.read(5)
    assert [c.type for c, _ in got] == [s.Type.CONNECTED, s.Type.SUCCESS] + [s.Type.MESSAGE] * 3
    wait_for(lambda: max(srv.unsent()) > 512 * 1024)        # it was pushed what fits ...
    held = max(srv.unsent())
    assert held <= 1 * MiB + 2 * 256 * 1024, f"{held} bytes held for a consumer that reads nothing"
    messages = greedy.read(100)                             # ... and, reading, it gets all of it, in order
    assert [c.message.message_id.entryId for c, _ in messages] == list(range(100))
    assert all(f.metadata_and_payload()[1][:8] == b"%08d" % i for i, (_, f) in enumerate(messages))
    greedy.close()
    polite.close()


def test_a_socket_that_never_connects_is_closed_after_the_handshake_timeout(listen, caplog):
    srv = listen(handshake_timeout_s=0.3)
    silent = Raw(srv.port)
    client = Raw(srv.port)
    client.send(CONNECT)
    assert client.read(1)[0][0].type == s.Type.CONNECTED
    assert silent.closed_soon(10)
    assert not client.closed_soon(1.0)
    assert len(lines(caplog, "no CONNECT within 0.3 s")) == 1
    client.close()


def test_a_stalled_half_frame_is_closed_after_the_frame_timeout(listen, caplog):
    srv = listen(frame_timeout_s=0.3)
    stalled = Raw(srv.port)
    send = s.BaseCommand(type=s.Type.SEND, send={"producer_id": 1, "sequence_id": 0}).SerializeToString()
    whole = encode_payload(send, s.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1)
                           .SerializeToString(), bytes(4 * MiB))
    stalled.send(CONNECT + whole[:2 * MiB])
    assert stalled.read(1)[0][0].type == s.Type.CONNECTED
    assert stalled.closed_soon(10)
    [line] = lines(caplog, "unfinished")
    assert "frame timeout 0.3 s" in line
    assert srv.on_loop(lambda: len(srv.server.connections)) == 0


def test_an_idle_connection_is_closed_but_not_one_that_pings(listen, caplog):
    srv = listen(idle_timeout_s=0.6)
    quiet, pinging = Raw(srv.port), Raw(srv.port)
    quiet.send(CONNECT)
    pinging.send(CONNECT)
    assert quiet.read(1)[0][0].type == pinging.read(1)[0][0].type == s.Type.CONNECTED
    for _ in range(6):                                       # 1.2 s of pings, two idle timeouts
        pinging.send(frame(type=s.Type.PING, ping={}))
        assert pinging.read(1)[0][0].type == s.Type.PONG
        if quiet.closed_soon(0.2):
            break
    assert quiet.closed_soon(10)
    assert not pinging.closed_soon(0.1)
    assert len(lines(caplog, "idle for")) == 1
    pinging.close()


def test_at_the_maximum_sockets_that_never_connected_make_room(listen, caplog):
    srv = listen(max_connections=2)
    client = Raw(srv.port)
    client.send(CONNECT)
    assert client.read(1)[0][0].type == s.Type.CONNECTED
    silent = [Raw(srv.port) for _ in range(4)]
    assert all(c.closed_soon(10) for c in silent[:3])        # each made room for the next
    silent[3].send(CONNECT)
    assert silent[3].read(1)[0][0].type == s.Type.CONNECTED
    late = Raw(srv.port)                                      # both open ones have connected: refused
    assert late.closed_soon(10)
    assert len(lines(caplog, "to admit")) == 3 and len(lines(caplog, "refusing")) == 1
    client.send(frame(type=s.Type.PING, ping={}))
    assert client.read(1)[0][0].type == s.Type.PONG


# -- the attack as reported, against `serve`, RSS from /proc ---------------------------------------
@pytest.mark.interop
def test_attack_stalled_consumers_of_a_50_mib_backlog_hold_a_bounded_amount(tmp_path):
    pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
    server = EmulatorProcess(tmp_path / "store", pulsar=True).start()
    try:
        client = pulsar.Client(f"pulsar://127.0.0.1:{server.pulsar_port}", operation_timeout_seconds=10)
        producer = client.create_producer(TOPIC, batching_enabled=False, max_pending_messages=50)
        for i in range(200):                                   # 50 MiB
            producer.send_async(b"%08d" % i + bytes(256 * 1024 - 8), None)
        producer.flush()
        client.close()
        before = status_mib(server.proc.pid, "RssAnon")
        stalled = []
        for i in range(8):
            c = Raw(server.pulsar_port, rcvbuf=64 * 1024)
            c.send(CONNECT + subscribe(f"stalled-{i}") + flow(1_000_000))
            assert [f.type for f, _ in c.read(2)] == [s.Type.CONNECTED, s.Type.SUCCESS]
            stalled.append(c)
        probe = Raw(server.pulsar_port)                        # the server still answers
        probe.send(CONNECT + frame(type=s.Type.PING, ping={}))
        assert [f.type for f, _ in probe.read(2)] == [s.Type.CONNECTED, s.Type.PONG]
        grown = status_mib(server.proc.pid, "RssAnon") - before
        print(f"8 stalled consumers of a 50 MiB backlog: server heap (RssAnon) {before:.0f} MiB -> +{grown:.0f} MiB")
        assert grown < 80, f"the server's heap grew {grown:.0f} MiB for 8 consumers that read nothing"
        for c in stalled:
            c.close()
        probe.close()
    finally:
        server.stop()


# -- what the front holds for all its connections together (issue 46, item 4) ----------------------
def test_stalled_consumers_together_hold_no_more_than_the_pending_bound_and_a_reader_goes_on(listen):
    bound, size, n = 1 * MiB, 64 * 1024, 120
    # each connection alone could be pushed 1 MiB (a quarter of 4 MiB); all together 1 MiB
    srv = listen(max_outgoing_buffer=4 * MiB, max_pending_bytes=bound)
    srv.store(n, size)                                      # 7.5 MiB of backlog
    stalled = []
    for i in range(12):                                     # 12 consumers that read nothing
        c = Raw(srv.port, rcvbuf=16 * 1024)
        c.send(CONNECT + subscribe(f"stalled-{i}") + flow(1_000_000))
        assert [f.type for f, _ in c.read(2)] == [s.Type.CONNECTED, s.Type.SUCCESS]
        stalled.append(c)
    # (past the bound a connection whose socket took all it was given gets one more message:
    # a stalled one, one while its socket's buffers fill, so at most one message each)
    most = bound + len(stalled) * (size + 256)
    wait_for(lambda: sum(srv.unsent()) >= bound)            # the bound is reached ...
    reader = Raw(srv.port)                                  # ... and a consumer that reads is served
    reader.send(CONNECT + subscribe("reader") + flow(n))
    assert [f.type for f, _ in reader.read(2)] == [s.Type.CONNECTED, s.Type.SUCCESS]
    got, held = [], []
    while len(got) < n:
        got += reader.read(1)
        held.append(sum(srv.unsent()))
    assert [c.message.message_id.entryId for c, _ in got] == list(range(n))
    assert max(held) <= most, f"{max(held)} bytes held for stalled consumers, bound {bound}"
    assert srv.on_loop(lambda: srv.server.pending.total) <= most
    # nothing is lost: the stalled consumers read now, and get all of it, in order
    for c in stalled:
        messages = c.read(n)
        assert [m.message.message_id.entryId for m, _ in messages] == list(range(n))
        assert all(f.metadata_and_payload()[1][:8] == b"%08d" % i for i, (_, f) in enumerate(messages))
        c.close()
    reader.close()
    wait_for(lambda: srv.on_loop(lambda: srv.server.pending.total) == 0)       # all given back


@pytest.mark.interop
def test_attack_many_stalled_consumers_together_hold_the_pending_bound_and_a_real_client_reads(tmp_path):
    pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
    server = EmulatorProcess(tmp_path / "store", "--pulsar-max-pending-bytes", str(8 * MiB), pulsar=True).start()
    try:
        client = pulsar.Client(f"pulsar://127.0.0.1:{server.pulsar_port}", operation_timeout_seconds=10,
                               logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        producer = client.create_producer(TOPIC, batching_enabled=False, max_pending_messages=50)
        for i in range(50):                                    # 12.5 MiB
            producer.send_async(b"%08d" % i + bytes(256 * 1024 - 8), None)
        producer.flush()
        before = status_mib(server.proc.pid, "RssAnon")
        stalled = []
        for i in range(40):                                    # each alone may be pushed 4 MiB: 160 MiB
            c = Raw(server.pulsar_port, rcvbuf=64 * 1024)
            c.send(CONNECT + subscribe(f"stalled-{i}") + flow(1_000_000))
            assert [f.type for f, _ in c.read(2)] == [s.Type.CONNECTED, s.Type.SUCCESS]
            stalled.append(c)
        reader = client.subscribe(TOPIC, "reads", initial_position=pulsar.InitialPosition.Earliest)
        got = [reader.receive(10_000).data()[:8] for _ in range(50)]
        assert got == [b"%08d" % i for i in range(50)]         # served while the others stall
        grown = status_mib(server.proc.pid, "RssAnon") - before
        print(f"40 stalled consumers, --pulsar-max-pending-bytes 8 MiB: heap {before:.0f} MiB -> +{grown:.0f} MiB")
        assert grown < 60, f"the server's heap grew {grown:.0f} MiB for 40 consumers that read nothing"
        last = stalled[-1].read(50)                            # nothing lost: a stalled one reads it all
        assert [f.message.message_id.entryId for f, _ in last] == list(range(50))
        for c in stalled:
            c.close()
        client.close()
    finally:
        server.stop()
