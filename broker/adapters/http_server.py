"""serve's HTTP front on the asyncio loop (aiohttp): ``/healthz`` and ``/metrics``.

``/healthz`` answers 200 with ``{"status": "ready", ...}`` once every listener of the
server is up (each broker's remoting port, the gRPC and Pulsar fronts when on), 503
with what is not otherwise; ``/metrics`` is the Prometheus text of broker/metrics.py's
collector, in its own registry (no process-wide default collectors mixed in). Errors
are JSON: ``{"error": "..."}`` with a 4xx. It decides nothing: it reads.
"""
from __future__ import annotations

import json
import logging
import socket
from typing import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from ..metrics import BrokerCollector

__all__ = ["HttpServer"]

log = logging.getLogger("broker.http")


class HttpServer:
    def __init__(self, host: str, port: int, collector: BrokerCollector,
                 listeners: Callable[[], dict[str, bool]]) -> None:
        self.host, self.port = host, port
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(collector)
        self.listeners = listeners              # name -> up
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/metrics", self._metrics)
        app.middlewares.append(_json_errors)
        self._runner = web.AppRunner(app, access_log=None)

    async def start(self) -> None:
        """Bind (an OSError when the port is taken: nothing was started) and serve."""
        sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.port))
        except OSError:
            sock.close()
            raise
        self.port = sock.getsockname()[1]
        await self._runner.setup()
        await web.SockSite(self._runner, sock).start()

    async def stop(self) -> None:
        await self._runner.cleanup()

    async def _healthz(self, request: web.Request) -> web.Response:
        state = self.listeners()
        down = sorted(name for name, up in state.items() if not up)
        body = {"status": "ready" if not down else "not ready", "listeners": state}
        if down:
            body["down"] = down
        return web.json_response(body, status=200 if not down else 503)

    async def _metrics(self, request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(self.registry), headers={"Content-Type": CONTENT_TYPE_LATEST})


@web.middleware
async def _json_errors(request: web.Request, handler):
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return web.json_response({"error": exc.reason, "path": request.path}, status=exc.status)
    except Exception:       # a bug answers 500 and is logged; the server goes on
        log.exception("HTTP %s %s failed", request.method, request.path)
        return web.Response(status=500, text=json.dumps({"error": "internal error"}),
                            content_type="application/json")
