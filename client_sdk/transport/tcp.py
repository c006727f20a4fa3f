"""The SDK over TCP: RocketMQ 4.x remoting frames to a name server and its brokers.

``TcpTransport`` is the Transport of ``base.py`` on real sockets; ``remote.RemoteBroker``
is the Connector users hand to Producer / PushConsumer.

Threads, and why not asyncio. Each connection is a blocking socket; one reader thread
per transport waits on all of them (a selector) and decodes frames with
``broker.protocol``'s sans-I/O codec, completing requests by opaque. A blocking
``request`` registers a pre-acquired lock, writes its frame from the calling thread and
waits on that lock; the reader releases it. So a synchronous send costs one
``sendall``, one ``recv`` and one lock hand-off, needs no loop, and works from any
thread (a listener on the client loop may send). An asyncio loop in a thread would add
a cross-thread hop (``run_coroutine_threadsafe``: a future, a self-pipe write, a loop
iteration) to every request for no gain: the SDK's own loop is ``ClientRuntime``, not
asyncio.

Async replies and broker→client requests (NOTIFY_CONSUMER_IDS_CHANGED) are handed to
the client loop with ``runtime.call_soon_threadsafe``, one hand-off per wake-up of the
reader however many frames and connections it carried, so listeners, rebalancing and
offsets stay single-threaded on the runtime exactly as in process. Async timeouts are found by the reader too: it
waits with a short timeout and scans for expired calls (RocketMQ's scanResponseTable,
every 100 ms here rather than 1 s), so ``request_async`` never touches the loop's
timers and may be called from any thread. Whoever pops a pending entry first (the
reader for a reply or a timeout, ``close``) owns it, so a callback runs once. Pending
entries live in a plain dict per connection: ``dict.pop`` is atomic under the GIL,
which is all these races need.

Routing, as RocketMQ's client does it: GET_ROUTEINFO_BY_TOPIC / GET_BROKER_CLUSTER_INFO
go to the name server; route and cluster replies teach broker name → master address
(``brokerAddrs["0"]``); a request naming its broker (``bname``, ``n`` in a send header,
``mqSet[].brokerName`` in LOCK/UNLOCK bodies) goes there; HEART_BEAT and
UNREGISTER_CLIENT go to every known broker; anything else to one known broker. A
broker-bound request before any route asks the name server for the cluster info first.
``rocketmq-emulator serve`` is name server and broker on one port, so against it all of
this lands on one connection.
"""
from __future__ import annotations

import _thread
import logging
import selectors
import socket
import threading
import time

from rocketmq_emulator.broker.fronts.remoting.protocol import FrameDecoder, ProtocolError, RemotingCommand, RequestCode, ResponseCode, encode
from rocketmq_emulator.broker.fronts.remoting.protocol.command import RPC_ONEWAY
from rocketmq_emulator.broker.fronts.remoting.protocol.fastjson import loads_fastjson

from ..errors import RemotingConnectError, RemotingError, RemotingTimeoutError
from ..runtime import ClientRuntime
from .base import RequestHandler, ResponseCallback, Transport
from .routing import EVERY_BROKER_CODES, NAME_SERVER_CODES, broker_name_of

__all__ = ["TcpTransport", "parse_addresses", "CONNECT_TIMEOUT_S"]

log = logging.getLogger("client_sdk.tcp")

CONNECT_TIMEOUT_S = 3.0
SCAN_INTERVAL_S = 0.1               # how late an async timeout may be noticed
_RECV_SIZE = 256 * 1024


def parse_addresses(text: str) -> list[tuple[str, int]]:
    """``host:port[;host:port...]`` (RocketMQ's namesrvAddr) → [(host, port)].
    ValueError with the offending part otherwise."""
    if not isinstance(text, str):
        raise ValueError(f"a name server address is a 'HOST:PORT' string, not {text!r}")
    out = []
    for part in text.replace(",", ";").split(";"):
        part = part.strip()
        if not part:
            continue
        host, sep, port = part.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"a name server address is HOST:PORT, got {part!r}")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise ValueError("no name server address given (expected HOST:PORT, e.g. 127.0.0.1:9876)")
    return out


class _Waiter:
    """A blocking request: the lock is taken at creation; the reader releases it."""

    __slots__ = ("lock", "response", "error")

    def __init__(self) -> None:
        self.lock = _thread.allocate_lock()
        self.lock.acquire()
        self.response: RemotingCommand | None = None
        self.error: BaseException | None = None

    def complete(self, response: RemotingCommand | None, error: BaseException | None) -> None:
        self.response = response
        self.error = error
        self.lock.release()


class _AsyncCall:
    __slots__ = ("callback", "deadline", "code", "timeout_ms")

    def __init__(self, callback: ResponseCallback, code: int, timeout_ms: int) -> None:
        self.callback = callback
        self.deadline = time.monotonic() + timeout_ms / 1000.0
        self.code = code
        self.timeout_ms = timeout_ms


class _Connection:
    """One socket, its reader thread and the requests waiting for a reply on it."""

    def __init__(self, owner: "TcpTransport", addr: tuple[str, int]) -> None:
        self.owner = owner
        self.addr = addr
        self.name = f"{addr[0]}:{addr[1]}"
        try:
            sock = socket.create_connection(addr, timeout=CONNECT_TIMEOUT_S)
        except OSError as exc:
            raise RemotingConnectError(f"connect to {self.name} failed: {exc}") from None
        sock.settimeout(None)
        # Requests are small and latency-bound: never let Nagle hold one back.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = sock
        host, port = sock.getsockname()[:2]
        self.local_address = f"{host}:{port}"
        self.pending: dict[int, _Waiter | _AsyncCall] = {}
        self.closed = False
        self.close_reason = f"connection to {self.name} is closed"
        self._send_lock = threading.Lock()
        self.decoder = FrameDecoder()
        owner._reader.add(self)

    def write(self, data: bytes) -> None:
        if self.closed:
            raise RemotingConnectError(self.close_reason)
        try:
            with self._send_lock:
                self.sock.sendall(data)
        except OSError as exc:
            if self.closed:                # closed by another thread while we were sending
                raise RemotingConnectError(self.close_reason) from None
            self.close(f"send to {self.name} failed: {exc}")
            raise RemotingConnectError(self.close_reason) from None

    def take(self, data: bytes, for_loop: list) -> None:
        """Bytes read from the socket (by the transport's reader thread): replies complete
        their waiters here; async replies and broker requests go to ``for_loop``."""
        pending = self.pending
        items = None
        for cmd in self.decoder.feed(data):
            if cmd.flag & 1:                       # a response
                entry = pending.pop(cmd.opaque, None)
                if entry is None:
                    log.debug("%s: response %d to an unknown or timed-out request", self.name, cmd.opaque)
                elif entry.__class__ is _Waiter:
                    entry.complete(cmd, None)
                else:
                    if items is None:
                        items = []
                    items.append((entry, cmd))
            else:                                  # the broker asks us something
                if items is None:
                    items = []
                items.append((None, cmd))
        if items is not None:
            for_loop.append((self, items))

    def lost(self, why: str) -> None:
        self.close(why)
        self.fail_pending(RemotingConnectError(self.close_reason))

    def _expire(self, now: float) -> None:
        """Time out the async calls past their deadline (blocking waiters time
        themselves out)."""
        pending = self.pending
        expired = []
        for opaque, entry in list(pending.items()):
            if entry.__class__ is _AsyncCall and entry.deadline <= now and pending.pop(opaque, None) is not None:
                expired.append(entry)
        if expired:
            self.owner.runtime.call_soon_threadsafe(self.owner._time_out_on_loop, self.name, expired)

    def fail_pending(self, error: RemotingError) -> None:
        """Fail every request still waiting on this connection (waiters now, async
        callbacks on the loop)."""
        pending = self.pending
        failed = []
        for opaque in list(pending):
            entry = pending.pop(opaque, None)
            if entry is None:
                continue
            if entry.__class__ is _Waiter:
                entry.complete(None, error)
            else:
                failed.append(entry)
        if failed:
            self.owner.runtime.call_soon_threadsafe(self.owner._fail_on_loop, failed, error)

    def close(self, reason: str | None = None) -> None:
        """Close the socket (idempotent); the first reason given is the one callers see."""
        if self.closed:
            return
        if reason:
            self.close_reason = reason
        self.closed = True
        self.owner._reader.remove(self)
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


class _Reader:
    """One thread reads every connection of a transport (name server and brokers): it
    waits on all their sockets at once and hands what they brought to the client loop in
    one ``call_soon_threadsafe`` per wake-up, however many connections had data: with
    several brokers, one thread competes with the loop for the GIL instead of one per
    connection."""

    def __init__(self, owner: "TcpTransport") -> None:
        self.owner = owner
        self.selector = selectors.DefaultSelector()
        self.conns: dict[int, _Connection] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, conn: _Connection) -> None:
        with self._lock:
            self.selector.register(conn.sock, selectors.EVENT_READ, conn)
            self.conns[conn.sock.fileno()] = conn
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="rocketmq-remoting-reader", daemon=True)
                self._thread.start()

    def remove(self, conn: _Connection) -> None:
        with self._lock:
            for fd, c in list(self.conns.items()):
                if c is conn:
                    del self.conns[fd]
                    try:
                        self.selector.unregister(conn.sock)
                    except (KeyError, ValueError, OSError):
                        pass

    def _run(self) -> None:
        owner = self.owner
        select = self.selector.select
        monotonic = time.monotonic
        next_scan = monotonic() + SCAN_INTERVAL_S
        while not owner._closed:
            try:
                ready = select(SCAN_INTERVAL_S)
            except (OSError, ValueError):          # a socket closed under the selector: look again
                ready = []
            for_loop: list = []
            for key, _ in ready:
                conn = key.data
                if conn.closed:
                    continue
                try:
                    data = conn.sock.recv(_RECV_SIZE)
                except OSError as exc:
                    conn.lost(f"connection to {conn.name} broken: {exc}")
                    continue
                if not data:
                    conn.lost(f"connection to {conn.name} closed by the peer")
                    continue
                try:
                    conn.take(data, for_loop)
                except ProtocolError as exc:
                    conn.lost(f"connection to {conn.name} broken: {exc}")
            if for_loop:
                owner.runtime.call_soon_threadsafe(owner._on_loop_all, for_loop)
            now = monotonic()
            if now >= next_scan:
                for conn in list(self.conns.values()):
                    if conn.pending:
                        conn._expire(now)
                next_scan = now + SCAN_INTERVAL_S
        self.selector.close()


class TcpTransport(Transport):
    """One client's connections: its name server's and its brokers' (module doc)."""

    def __init__(self, runtime: ClientRuntime, name_servers: list[tuple[str, int]]) -> None:
        if not name_servers:
            raise ValueError("TcpTransport needs at least one name server address")
        self.runtime = runtime
        self.name_servers = list(name_servers)
        self._conns: dict[tuple[str, int], _Connection] = {}
        self._brokers: dict[str, tuple[str, int]] = {}     # broker name -> master address
        self._conn_lock = threading.Lock()
        self._handler: RequestHandler | None = None
        self._closed = False
        self._name_server: tuple[str, int] | None = None
        self._reader = _Reader(self)
        self._connect_name_server()                        # fail now if nothing listens

    # -- Transport -------------------------------------------------------------------------
    def request(self, cmd: RemotingCommand, timeout_ms: int = 3000) -> RemotingCommand:
        targets = self._targets(cmd)
        if len(targets) == 1:
            reply = self._call(targets[0], cmd, timeout_ms)
        else:
            # One request to every broker (heartbeat, unregister): each copy needs its own
            # opaque. The first failure answer wins, as the caller must hear about it.
            reply = None
            for conn in targets:
                r = self._call(conn, RemotingCommand.request(cmd.code, cmd.ext_fields, cmd.body), timeout_ms)
                if reply is None or (r.code != ResponseCode.SUCCESS and reply.code == ResponseCode.SUCCESS):
                    reply = r
        if cmd.code in NAME_SERVER_CODES:
            self._learn(cmd.code, reply)
        return reply

    def _call(self, conn: _Connection, cmd: RemotingCommand, timeout_ms: int) -> RemotingCommand:
        waiter = _Waiter()
        opaque = cmd.opaque
        data = encode(cmd)
        conn.pending[opaque] = waiter
        try:
            conn.write(data)
        except RemotingError:
            conn.pending.pop(opaque, None)
            raise
        if not waiter.lock.acquire(timeout=max(timeout_ms, 0) / 1000.0):
            if conn.pending.pop(opaque, None) is not None:
                raise RemotingTimeoutError(f"wait response on the channel <{conn.name}> timeout, "
                                           f"{timeout_ms}(ms) (request code {cmd.code})")
            waiter.lock.acquire()                          # the reply won the race; it is set
        if waiter.error is not None:
            raise waiter.error
        return waiter.response

    def request_async(self, cmd: RemotingCommand, callback: ResponseCallback, timeout_ms: int = 30000) -> None:
        rt = self.runtime
        try:
            conn = self._targets(cmd)[0]
            data = encode(cmd)
        except RemotingError as exc:
            rt.call_soon_threadsafe(callback, None, exc)
            return
        opaque = cmd.opaque
        conn.pending[opaque] = _AsyncCall(callback, cmd.code, timeout_ms)
        try:
            conn.write(data)
        except RemotingError as exc:
            if conn.pending.pop(opaque, None) is not None:
                rt.call_soon_threadsafe(callback, None, exc)

    def oneway(self, cmd: RemotingCommand) -> None:
        cmd.flag |= RPC_ONEWAY
        targets = self._targets(cmd)
        for conn in targets:
            if len(targets) > 1:
                cmd = RemotingCommand.request(cmd.code, cmd.ext_fields, cmd.body, oneway=True)
            conn.write(encode(cmd))

    def on_request(self, handler: RequestHandler) -> None:
        self._handler = handler

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with self._conn_lock:
            conns = list(self._conns.values())
            self._conns.clear()
        for conn in conns:
            conn.close(f"connection to {conn.name} closed by the client")
            conn.fail_pending(RemotingConnectError(conn.close_reason))

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def local_address(self) -> str:
        conn = self._conns.get(self._name_server) if self._name_server else None
        if conn is None:
            conn = next(iter(self._conns.values()), None)
        return conn.local_address if conn is not None else f"{self.runtime.ip}:0"

    @property
    def brokers(self) -> dict[str, str]:
        """Broker name → master address, as learned from routes so far."""
        return {name: f"{h}:{p}" for name, (h, p) in self._brokers.items()}

    # -- routing -----------------------------------------------------------------------------
    def _targets(self, cmd: RemotingCommand) -> list[_Connection]:
        if self._closed:
            raise RemotingConnectError("the connection is closed (the client was shut down)")
        code = cmd.code
        if code in NAME_SERVER_CODES:
            return [self._connect_name_server()]
        if not self._brokers:
            self._discover_brokers()
        if code in EVERY_BROKER_CODES:
            return [self._connect(addr) for addr in sorted(set(self._brokers.values()))]
        name = broker_name_of(cmd)
        if name is None:
            return [self._connect(min(self._brokers.values()))]
        addr = self._brokers.get(name)
        if addr is None:
            self._discover_brokers()
            addr = self._brokers.get(name)
            if addr is None:
                raise RemotingConnectError(f"broker {name!r} is in no route or cluster info "
                                           f"(known: {sorted(self._brokers)})")
        return [self._connect(addr)]

    def _discover_brokers(self) -> None:
        """Ask the name server for every broker (GET_BROKER_CLUSTER_INFO)."""
        reply = self.request(RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO))
        if not self._brokers:
            raise RemotingConnectError(f"the name server {self._name_server_text()} knows no broker "
                                       f"(GET_BROKER_CLUSTER_INFO answered code {reply.code}: {reply.remark})")

    def _learn(self, code: int, reply: RemotingCommand) -> None:
        """Broker master addresses from a route or cluster-info reply."""
        if reply.code != ResponseCode.SUCCESS or not reply.body:
            return
        try:
            data = loads_fastjson(reply.body)
            if code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
                broker_datas = data.get("brokerDatas") or []
            else:
                broker_datas = list((data.get("brokerAddrTable") or {}).values())
            for bd in broker_datas:
                master = (bd.get("brokerAddrs") or {}).get("0")
                if master:
                    self._brokers[bd["brokerName"]] = parse_addresses(master)[0]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("unreadable %s reply from the name server: %s", RequestCode(code).name, exc)

    def _name_server_text(self) -> str:
        return ";".join(f"{h}:{p}" for h, p in self.name_servers)

    def _connect_name_server(self) -> _Connection:
        """The name server connection; the first reachable address, kept while it lives."""
        if self._name_server is not None:
            conn = self._conns.get(self._name_server)
            if conn is not None and not conn.closed:
                return conn
        errors = []
        for addr in self.name_servers:
            try:
                conn = self._connect(addr)
            except RemotingConnectError as exc:
                errors.append(str(exc))
                continue
            self._name_server = addr
            return conn
        raise RemotingConnectError("no name server reachable: " + "; ".join(errors))

    def _connect(self, addr: tuple[str, int]) -> _Connection:
        conn = self._conns.get(addr)
        if conn is not None and not conn.closed:
            return conn
        with self._conn_lock:
            if self._closed:
                raise RemotingConnectError("the connection is closed (the client was shut down)")
            conn = self._conns.get(addr)
            if conn is None or conn.closed:
                # A lost connection is made again on next use, as RocketMQ's client does.
                conn = _Connection(self, addr)
                self._conns[addr] = conn
            return conn

    # -- on the client loop ---------------------------------------------------------------------
    def _on_loop_all(self, batches: list) -> None:
        for conn, items in batches:
            self._on_loop(conn, items)

    def _on_loop(self, conn: _Connection, items: list) -> None:
        for entry, cmd in items:
            if entry is not None:
                entry.callback(cmd, None)
            else:
                self._serve_request(conn, cmd)

    def _serve_request(self, conn: _Connection, cmd: RemotingCommand) -> None:
        """A broker→client request (NOTIFY_CONSUMER_IDS_CHANGED is oneway)."""
        reply = None
        if self._handler is not None:
            reply = self._handler(cmd)
        if cmd.flag & RPC_ONEWAY:
            return
        if reply is None:
            reply = cmd.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED if self._handler is None
                                 else ResponseCode.SUCCESS)
        try:
            conn.write(encode(reply))
        except RemotingError as exc:
            log.warning("answering broker request %d on %s failed: %s", cmd.code, conn.name, exc)

    def _fail_on_loop(self, calls: list[_AsyncCall], error: BaseException) -> None:
        for call in calls:
            call.callback(None, error)

    def _time_out_on_loop(self, name: str, calls: list[_AsyncCall]) -> None:
        for call in calls:
            call.callback(None, RemotingTimeoutError(f"wait response on the channel <{name}> timeout, "
                                                     f"{call.timeout_ms}(ms) (request code {call.code})"))

    def __repr__(self) -> str:
        state = ", closed" if self._closed else ""
        return f"TcpTransport({self._name_server_text()}, brokers={self.brokers}{state})"
