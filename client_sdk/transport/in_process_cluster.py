"""A cluster of brokers in this process (``broker.cluster.Cluster``): one in-process hub
per broker on one runtime, and a transport that routes each request to its broker as
the TCP transport does (``routing``) — so the SDK's cluster paths (a producer moving to
another broker, a send-back falling back to the inner producer, rebalancing away from
a stopped broker) run in process, on the virtual clock.

A stopped broker is as one whose port refuses connections: requests to it raise
RemotingConnectError, and the connections its clients had are closed when it stops.
"""
from __future__ import annotations

from rocketmq_emulator.broker.cluster import Cluster, ClusterError
from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, ResponseCode

from ..errors import RemotingConnectError
from ..runtime import ClientRuntime
from .base import Connector, RequestHandler, ResponseCallback, Transport
from .inprocess import InProcessBroker, InProcessTransport
from .routing import EVERY_BROKER_CODES, NAME_SERVER_CODES, broker_name_of

__all__ = ["InProcessCluster", "ClusterTransport"]


class InProcessCluster(Connector):
    """Clients of ``cluster``'s brokers; ``hub_class`` makes each broker's hub
    (InProcessBroker, or LoopbackBroker to encode every command)."""

    def __init__(self, cluster: Cluster, runtime: ClientRuntime | None = None, *,
                 hub_class=InProcessBroker, skip_idle: bool = True) -> None:
        self.cluster = cluster
        self.runtime = runtime if runtime is not None else ClientRuntime(cluster.clock)
        self.hubs: dict[str, InProcessBroker] = {
            name: hub_class(cluster.core(name), self.runtime, skip_idle=skip_idle) for name in cluster.names}
        self._transports: list[ClusterTransport] = []
        # idle skipping needs one hub per runtime: with several it is off (see InProcessBroker)
        self.skipper = None

    def connect(self) -> "ClusterTransport":
        t = ClusterTransport(self)
        self._transports = [x for x in self._transports if not x.closed]
        self._transports.append(t)
        return t

    def stop_broker(self, name: str) -> None:
        """Stop ``name`` (Cluster.stop) and close every client connection to it."""
        self.cluster.stop(name)
        for t in self._transports:
            t._drop(name)

    def start_broker(self, name: str) -> None:
        self.cluster.start(name)
        self.hubs[name].tick()              # hand on what it did at start (held pulls, due messages)

    def inject_fault(self, code: int, **kwargs):
        removers = [hub.inject_fault(code, **kwargs) for hub in self.hubs.values()]
        return lambda: [r() for r in removers]

    def close(self) -> None:
        for t in self._transports:
            t.close()
        for hub in self.hubs.values():
            hub.close()


class ClusterTransport(Transport):
    """One client's connections to the brokers of an InProcessCluster."""

    def __init__(self, owner: InProcessCluster) -> None:
        self.owner = owner
        self.runtime = owner.runtime
        self._conns: dict[str, InProcessTransport] = {}
        self._handler: RequestHandler | None = None
        self._closed = False

    def _conn(self, name: str) -> InProcessTransport:
        if self._closed:
            raise RemotingConnectError("the connection is closed (the client was shut down)")
        cluster = self.owner.cluster
        try:
            up = cluster.up(name)
        except ClusterError as exc:
            raise RemotingConnectError(str(exc)) from None
        if not up:
            raise RemotingConnectError(f"connect to {cluster.core(name).addr} ({name}) failed: the broker is stopped")
        t = self._conns.get(name)
        if t is None or t.closed:
            t = self._conns[name] = self.owner.hubs[name].connect()
            if self._handler is not None:
                t.on_request(self._handler)
        return t

    def _targets(self, cmd: RemotingCommand) -> list[InProcessTransport]:
        cluster = self.owner.cluster
        up = [n for n in cluster.names if cluster.up(n)]
        if not up:
            raise RemotingConnectError("no broker of the cluster is running")
        if cmd.code in NAME_SERVER_CODES:
            return [self._conn(up[0])]          # every member answers for the whole cluster
        if cmd.code in EVERY_BROKER_CODES:
            return [self._conn(n) for n in up]
        name = broker_name_of(cmd)
        return [self._conn(name if name is not None else up[0])]

    # -- Transport ------------------------------------------------------------------------------
    def request(self, cmd: RemotingCommand, timeout_ms: int = 3000) -> RemotingCommand:
        targets = self._targets(cmd)
        if len(targets) == 1:
            return targets[0].request(cmd, timeout_ms)
        reply = None            # one copy per broker, each with its own opaque; a failure wins
        for t in targets:
            r = t.request(RemotingCommand.request(cmd.code, cmd.ext_fields, cmd.body), timeout_ms)
            if reply is None or (r.code != ResponseCode.SUCCESS and reply.code == ResponseCode.SUCCESS):
                reply = r
        return reply

    def request_async(self, cmd: RemotingCommand, callback: ResponseCallback, timeout_ms: int = 30000) -> None:
        try:
            target = self._targets(cmd)[0]
        except RemotingConnectError as exc:
            self.runtime.call_soon(callback, None, exc)
            return
        target.request_async(cmd, callback, timeout_ms)

    def oneway(self, cmd: RemotingCommand) -> None:
        targets = self._targets(cmd)
        for t in targets:
            t.oneway(cmd if len(targets) == 1 else RemotingCommand.request(cmd.code, cmd.ext_fields, cmd.body,
                                                                           oneway=True))

    def on_request(self, handler: RequestHandler) -> None:
        self._handler = handler
        for t in self._conns.values():
            t.on_request(handler)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for t in self._conns.values():
            t.close()
        self._conns.clear()

    def _drop(self, name: str) -> None:
        t = self._conns.pop(name, None)
        if t is not None:
            t.close()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def local_address(self) -> str:
        t = next(iter(self._conns.values()), None)
        return t.local_address if t is not None else f"{self.runtime.ip}:0"

    def __repr__(self) -> str:
        return f"ClusterTransport({', '.join(self._conns)}{', closed' if self._closed else ''})"

