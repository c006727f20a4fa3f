"""The transport interface: how the SDK talks to a broker (and its name server).

A transport is one client connection carrying RocketMQ 4.x ``RemotingCommand`` objects
(``broker.protocol``): ext_fields hold strings, bodies raw bytes, exactly what the
network carries. Implementations: ``inprocess.InProcessTransport`` (straight into a
``BrokerCore`` in this process) and a TCP transport (frames over a socket, same
interface). Everything the SDK needs is these six members:

    runtime                   the ClientRuntime whose loop runs callbacks and owns time
    request(cmd, timeout_ms)  send a request, return its response (blocking / direct);
                              raises RemotingError (closed), RemotingTimeoutError
    request_async(cmd, callback, timeout_ms)
                              send a request; later the loop calls
                              ``callback(response, None)`` or ``callback(None, error)``.
                              Never calls back inside request_async itself.
    oneway(cmd)               send a oneway request (flag 2); no response
    on_request(handler)       broker→client requests (NOTIFY_CONSUMER_IDS_CHANGED ...)
                              are passed to ``handler(cmd)`` on the loop; a returned
                              command is sent back as the response (ignored for oneway).
                              (In process the core's ConsumerIdsChanged comes as it is.)
    close()                   close the connection; pending async requests fail with
                              RemotingConnectError on the loop

plus ``local_address`` ("ip:port" as the broker sees this client) and ``closed``;
and, for the in-process transport only, ``core()`` / ``core_done()`` and the typed calls
``send()``, ``pull()``, ``send_back()``, ``commit_offset()``, ``register()``, ``route()``:
every call goes to the core's typed operations, no command built (api.py decides, per
transport; fault rules are asked at the broker's door, not here).

Rules for implementers: ``request`` must not need the loop to make progress (a TCP
transport completes it from its reader, not from a loop task), and callbacks go
through ``runtime.call_soon`` / ``call_soon_threadsafe`` so they run on the loop.

Where requests go: the in-process core is name server and broker in one, so one
transport carries everything. Against a real RocketMQ cluster a transport routes by
code: GET_ROUTEINFO_BY_TOPIC / GET_BROKER_CLUSTER_INFO to the name server; requests
for one broker carry its name (``bname`` in ext_fields, ``n`` in SEND_MESSAGE_V2, the
mq's ``brokerName`` in LOCK/UNLOCK bodies); HEART_BEAT and UNREGISTER_CLIENT go to every
broker, GET_CONSUMER_LIST_BY_GROUP to any one. Broker addresses are in the route
replies (``brokerAddrs["0"]`` is the master).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Callable, Optional

from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand

from ..runtime import ClientRuntime

__all__ = ["Transport", "ResponseCallback", "RequestHandler", "Connector"]

ResponseCallback = Callable[[Optional[RemotingCommand], Optional[BaseException]], None]
RequestHandler = Callable[[RemotingCommand], Optional[RemotingCommand]]


class Transport(ABC):
    """One connection to a broker. See the module docstring for the contract."""

    runtime: ClientRuntime

    @abstractmethod
    def request(self, cmd: RemotingCommand, timeout_ms: int = 3000) -> RemotingCommand: ...

    @abstractmethod
    def request_async(self, cmd: RemotingCommand, callback: ResponseCallback, timeout_ms: int = 30000) -> None: ...

    @abstractmethod
    def oneway(self, cmd: RemotingCommand) -> None: ...

    @abstractmethod
    def on_request(self, handler: RequestHandler) -> None: ...

    @abstractmethod
    def close(self) -> None: ...

    @property
    @abstractmethod
    def closed(self) -> bool: ...

    @property
    @abstractmethod
    def local_address(self) -> str: ...

    def core(self):
        """The BrokerCore this connection reaches directly, when the SDK may call its
        typed operations instead of sending commands (the in-process transport while
        nothing watches its commands); None for every transport that carries frames.
        The calls a fault rule can be about — send, pull, send_back, commit_offset,
        register, route — then go through the transport's typed methods of those
        names, which ask the broker's door."""
        return None

    def core_done(self) -> None:
        """After a typed call on ``core()``: hand on what the core emitted meanwhile."""


class Connector(ABC):
    """Something clients can be attached to: it makes transports and names the runtime.
    ``EmbeddedBroker`` and ``InProcessBroker`` are connectors; so will a TCP endpoint be."""

    runtime: ClientRuntime

    @abstractmethod
    def connect(self) -> Transport: ...
