"""Transports: how clients reach a broker. ``base.Transport`` is the interface;
``inprocess`` (import it explicitly: it pulls in the broker core) talks to a core in
this process; a TCP transport speaks the same interface over a socket."""
from .base import Connector, RequestHandler, ResponseCallback, Transport

__all__ = ["Connector", "RequestHandler", "ResponseCallback", "Transport"]
