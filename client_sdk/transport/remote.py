"""``RemoteBroker``: a name server address that SDK clients connect to over TCP.

    remote = RemoteBroker("127.0.0.1:9876")
    producer = Producer("pg", remote).start()
    consumer = PushConsumer("cg", remote, listener=on_message).subscribe("T", "*").start()
    remote.run_until(lambda: done, "10s")          # drive the client loop from this thread
    remote.close()

or let each client own one: ``Producer("pg", namesrv_addr="127.0.0.1:9876")`` — the
client then runs its loop in a background thread from ``start()`` to ``shutdown()``,
the way RocketMQ's Java client runs its own threads.

The loop (``ClientRuntime``) runs on the real clock: a remote server's time is not
ours to move. A virtual-clock ``serve`` is moved with ``advance_server_clock`` (the
emulator's clock request, the same one ``rocketmq-emulator clock advance`` sends); the
redeliveries that releases arrive over the sockets, and the loop handles them in real
time.
"""
from __future__ import annotations

import logging
import threading
from typing import Callable

from rocketmq_emulator.broker.cluster import BrokerState
from rocketmq_emulator.broker.facade.across import DeadLetter, RedriveResult
from rocketmq_emulator.broker.fronts.remoting.protocol import (EMULATOR_BROKER_CONTROL, EMULATOR_CLOCK_ADVANCE, EMULATOR_DLQ,
                                             EMULATOR_FAULTS, RemotingCommand, ResponseCode)
from rocketmq_emulator.delay_scheduler import SystemClock

from ..errors import MQBrokerError, MQClientError, RemotingTimeoutError, ServerClockError
from ..runtime import ClientRuntime, to_millis
from ..admin import AdminOperations
from .base import Connector
from .tcp import TcpTransport, parse_addresses

__all__ = ["RemoteBroker", "own_remote_broker"]

log = logging.getLogger("client_sdk.remote")


class _StopLoop(BaseException):
    """Raised by a task to leave the background loop at once: the runtime logs and
    keeps going after an Exception, but lets a BaseException through, so a stop is
    prompt even while replies keep the loop busy."""



class RemoteBroker(AdminOperations, Connector):
    """Connects clients to the name server(s) at ``namesrv_addr`` ("host:port[;...]")
    and owns their client loop (a real-clock ``ClientRuntime``).

    Drive the loop from your thread (``run_until``, ``run_for``) or start a background
    thread (``run_in_background``); while it runs, create, start and shut down clients
    only through ``call(fn)`` (the loop's timers are not thread-safe). A Producer's
    ``send`` works from any thread either way: it blocks on the socket, not the loop.
    """

    def __init__(self, namesrv_addr: str, *, client_ip: str = "127.0.0.1",
                 runtime: ClientRuntime | None = None) -> None:
        try:
            self.name_servers = parse_addresses(namesrv_addr)
        except ValueError as exc:
            raise MQClientError(f"bad namesrv_addr: {exc}") from None
        if runtime is not None and runtime.virtual:
            raise MQClientError("a RemoteBroker's runtime must run on the real clock: a remote server's "
                                "time is not the client's to move (use advance_server_clock)")
        self.namesrv_addr = namesrv_addr
        self.runtime = runtime if runtime is not None else ClientRuntime(SystemClock(), ip=client_ip)
        self._transports: list[TcpTransport] = []
        self._admin: TcpTransport | None = None
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._closed = False

    def connect(self) -> TcpTransport:
        if self._closed:
            raise MQClientError(f"RemoteBroker({self.namesrv_addr}) is closed")
        t = TcpTransport(self.runtime, self.name_servers)
        self._transports = [x for x in self._transports if not x.closed]
        self._transports.append(t)
        return t

    # -- the emulator's clock -------------------------------------------------------------------
    def advance_server_clock(self, duration: int | str, timeout_ms: int = 60000) -> int:
        """Move a virtual-clock ``rocketmq-emulator serve`` forward by ``duration``
        ("10s", "2h", ms); returns the server's new time in ms once everything due by
        then has been re-stored and written to waiting pulls. ServerClockError (an
        MQBrokerError) if the server runs on the real clock."""
        ms = to_millis(duration)
        if self._admin is None or self._admin.closed:
            self._admin = self.connect()
        cmd = RemotingCommand.request(EMULATOR_CLOCK_ADVANCE, {"millis": ms})
        # The name server connection: `serve` is name server and broker on one port.
        reply = self._admin._call(self._admin._connect_name_server(), cmd, timeout_ms)
        if reply.code != ResponseCode.SUCCESS:
            raise ServerClockError(reply.code, reply.remark, self.namesrv_addr)
        return reply.header_int("nowMillis")

    # -- the cluster's brokers (serve --brokers N) ---------------------------------------------------
    def brokers(self) -> list[BrokerState]:
        """Every broker behind the name server: name, address, up or stopped, permission, topics."""
        import json

        reply = self._broker_control("list")
        return [BrokerState(b["brokerName"], b["address"], b["up"], b["brokerPermission"], b["topics"])
                for b in json.loads(reply.body or b"[]")]

    def set_writeable(self, writeable: bool, broker: str) -> None:
        """Switch ``broker``'s write permission (brokerPermission 6 / 4); routes change at once."""
        self._broker_control("write", broker, "on" if writeable else "off")

    def stop_broker(self, name: str) -> None:
        """Stop a broker of the server's cluster: out of every route, connections refused.
        MQBrokerError (the server's one line) for an unknown name or the last broker
        serving a topic."""
        self._broker_control("stop", name)

    def start_broker(self, name: str) -> None:
        self._broker_control("start", name)

    # -- dead letters --------------------------------------------------------------------------------
    def dead_letters(self, group: str) -> list[DeadLetter]:
        """``group``'s dead letters on the server (every broker of a cluster)."""
        import json

        reply = self._admin_request(EMULATOR_DLQ, {"action": "list", "consumerGroup": group}, "dlq list")
        return [DeadLetter(**{k: v for k, v in d.items() if k != "broker"}) for d in json.loads(reply.body or b"[]")]

    def redrive(self, group: str, ids: list[str] | None = None, *, dry_run: bool = False) -> RedriveResult:
        """Re-drive ``group``'s dead letters (``ids``, or every one) on the server; the
        server's refusal (an empty DLQ, an unknown id) is an MQBrokerError with its line."""
        import json

        fields = {"action": "redrive", "consumerGroup": group, "dryRun": "true" if dry_run else "false"}
        if ids is not None:
            fields["ids"] = ",".join(ids)
        doc = json.loads(self._admin_request(EMULATOR_DLQ, fields, "dlq redrive").body)
        named = doc["sent"] + doc["already"]
        return RedriveResult(tuple((s["id"], s["new_id"]) for s in doc["sent"]), tuple(a["id"] for a in doc["already"]),
                             doc["dry_run"], {d["id"]: d["msg_id"] for d in named})

    # -- fault rules -----------------------------------------------------------------------------------
    @property
    def faults(self):
        """The server's fault rules: ``remote.faults.add("send", "refuse", times=1)``, list,
        remove, clear (client_sdk/faults.py; what `rocketmq-emulator fault` does)."""
        import json

        from ..faults import RemoteFaults

        def request(fields: dict, body: bytes = b"", refused=None):
            try:
                reply = self._admin_request(EMULATOR_FAULTS, fields, f"fault {fields['action']}", body=body)
            except MQBrokerError as exc:
                if refused is None:
                    raise
                raise refused(exc.remark) from None
            return json.loads(reply.body or b"null")

        return RemoteFaults(request)

    def _admin_request(self, code: int, fields: dict, what: str, timeout_ms: int = 30000,
                       body: bytes = b"") -> RemotingCommand:
        if self._admin is None or self._admin.closed:
            self._admin = self.connect()
        reply = self._admin._call(self._admin._connect_name_server(), RemotingCommand.request(code, fields, body),
                                  timeout_ms)
        if reply.code != ResponseCode.SUCCESS:
            raise MQBrokerError(reply.code, reply.remark, self.namesrv_addr, what)
        return reply

    def _broker_control(self, action: str, name: str | None = None, value: str | None = None,
                        timeout_ms: int = 10000) -> RemotingCommand:
        fields = {"action": action, "brokerName": name, "value": value}
        return self._admin_request(EMULATOR_BROKER_CONTROL, {k: v for k, v in fields.items() if v is not None},
                                   f"broker {action}", timeout_ms)

    # -- the loop ---------------------------------------------------------------------------------
    def run_for(self, duration: int | str) -> None:
        self.runtime.run_for(duration)

    def run_until(self, predicate: Callable[[], bool], timeout: int | str = "30s") -> bool:
        """Run the client loop in this thread until ``predicate()`` or ``timeout``
        (real time) passes; returns the predicate's last value."""
        if self._thread is not None:
            raise MQClientError("the loop runs in a background thread; wait for your condition instead")
        return self.runtime.run_until(predicate, timeout)

    @property
    def in_background(self) -> bool:
        return self._thread is not None

    def run_in_background(self) -> None:
        """Run the client loop in a daemon thread until ``stop()``."""
        if self._thread is not None:
            return
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name=f"rocketmq-client-loop-{self.namesrv_addr}",
                                        daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        rt = self.runtime
        while not self._stopping:
            try:
                rt.run_until(lambda: self._stopping, "1h")
            except _StopLoop:
                return
            except Exception:    # a listener's error must not end the client's loop
                log.exception("client task failed on the loop of %s", self.namesrv_addr)

    def call(self, fn: Callable, *args, timeout_s: float = 10.0):
        """Run ``fn(*args)`` on the loop thread (or here when no loop thread runs) and
        return its result."""
        if self._thread is None or threading.current_thread() is self._thread:
            return fn(*args)
        done = threading.Event()
        box: dict = {}

        def run():
            try:
                box["value"] = fn(*args)
            except BaseException as exc:   # handed to the caller
                box["error"] = exc
            finally:
                done.set()
        self.runtime.call_soon_threadsafe(run)
        if not done.wait(timeout_s):
            raise RemotingTimeoutError(f"the client loop did not run {fn!r} within {timeout_s} s")
        if "error" in box:
            raise box["error"]
        return box.get("value")

    def stop(self) -> None:
        """Stop the background loop (after the task it is running). From the loop
        thread itself, only asks it to stop."""
        thread = self._thread
        if thread is None:
            return
        self._stopping = True
        if threading.current_thread() is thread:
            return                                         # the loop ends after this task
        def stop_task():
            # A no-op if the loop thread already left (another thread may drive the loop later).
            if threading.current_thread() is thread:
                raise _StopLoop
        self.runtime.call_soon_threadsafe(stop_task)       # wakes a waiting loop, cuts a busy one short
        thread.join(30)
        if thread.is_alive():
            log.warning("the client loop of %s is still running a task after 30 s", self.namesrv_addr)
        self._thread = None

    def close(self) -> None:
        """Stop the loop and close every connection made here."""
        self.stop()
        self._closed = True
        for t in self._transports:
            t.close()

    def __repr__(self) -> str:
        return f"RemoteBroker({self.namesrv_addr!r}{', closed' if self._closed else ''})"


def own_remote_broker(broker, namesrv_addr: str | None, who: str):
    """For ``Producer(..., namesrv_addr=...)`` / ``PushConsumer(...)``: a RemoteBroker
    the client owns, or None when the caller passed ``broker`` instead. MQClientError
    if both or a bad address are given."""
    if namesrv_addr is None:
        return None
    if broker is not None:
        raise MQClientError(f"{who}: pass either a broker or namesrv_addr, not both")
    return RemoteBroker(namesrv_addr)
