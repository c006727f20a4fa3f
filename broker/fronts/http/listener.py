"""serve's HTTP front on the asyncio loop (aiohttp): ``/healthz``, ``/metrics`` and the
dashboard (``/``, ``/api/state``, ``POST /api/clock/advance``, ``POST /api/dlq/redrive``,
the fault rules of fault_api.py: ``/api/faults``).

``/healthz`` answers 200 with ``{"status": "ready", ...}`` once every listener of the
server is up (each broker's remoting port, the gRPC and Pulsar fronts when on) and every
running broker's store takes writes, 503 with what is not (``down``, and ``store``: why
a store refuses writes, e.g. a full disk) otherwise; ``/metrics`` is the Prometheus text of broker/fronts/http/metrics.py's
collector, in its own registry (no process-wide default collectors mixed in). Errors
are JSON: ``{"error": "..."}`` with a 4xx. The dashboard's actions call what the CLI's
requests call (the cluster's clock advance, facade/across.redrive); handlers run on the
loop that serves every front, so they are serialised with every other request.
Who may ask, and what a connection may hold: http_guard.py.
"""
from __future__ import annotations

import asyncio
import json
import logging
import socket
from typing import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from ...cluster import next_due_ms
from . import dashboard_api, fault_api
from .dashboard import DashboardViews, EventFeed
from .dashboard_page import PAGE
from ...facade.across import DeadLetterError, redrive
from ...errors import ClockError
from ...log_text import printable
from .metrics import BrokerCollector, FaultCollector
from .pulsar_admin import ADMIN_PREFIXES, PulsarAdmin
from ...adapters.connection_guard import ConnectionGuard, ConnectionLimits
from .guard import (MAX_BODY, GuardedHttp, HttpAccess, ProtocolLog, access_for, access_middleware, json_body,
                         tracking_middleware)

__all__ = ["HttpServer"]

log = logging.getLogger("broker.http")


class HttpServer:
    def __init__(self, host: str, port: int, collector: BrokerCollector,
                 listeners: Callable[[], dict[str, bool]], cores: Callable[[], list] | None = None, *,
                 access: HttpAccess | None = None, limits: ConnectionLimits | None = None,
                 pulsar_url: Callable[[], str | None] = lambda: None) -> None:
        """``access``: who may ask (default: as bound to ``host`` with no option given);
        ``limits``: connection_guard.py's; ``pulsar_url()``: the Pulsar front's address,
        what HTTP lookups answer (Pulsar's admin API: pulsar_admin.py)."""
        self.host, self.port = host, port
        self.access = access if access is not None else access_for(host)[0]
        self.limits = limits if limits is not None else ConnectionLimits()
        self.guard = ConnectionGuard(self.limits, log)
        self.guarded: dict[object, GuardedHttp] = {}      # aiohttp's protocol -> its guarded connection
        self.cores = cores if cores is not None else collector.cores
        self.feed = EventFeed(self.cores())
        self.views = DashboardViews(self.cores)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(collector)
        self.fault_counts = FaultCollector(self.cores())
        self.registry.register(self.fault_counts)
        self.listeners = listeners              # name -> up
        app = web.Application(client_max_size=MAX_BODY, middlewares=[
            tracking_middleware(self), _json_errors, access_middleware(self.access, ADMIN_PREFIXES)])
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/", self._page)
        app.router.add_get("/api/state", self._state)
        app.router.add_get("/api/events", self._events)
        app.router.add_post("/api/clock/advance", self._advance)
        app.router.add_post("/api/dlq/redrive", self._redrive)
        app.router.add_routes(PulsarAdmin(lambda: self.cores()[0], pulsar_url,
                                          lambda: f"http://{self.host}:{self.port}").routes())
        dashboard_api.add_routes(app.router, self.views)           # the dashboard's other views
        fault_api.add_routes(app.router, self.cores)                # fault rules: list, add, remove, clear
        keepalive = {"keepalive_timeout": self.limits.idle_timeout_s} if self.limits.idle_timeout_s else {}
        self._runner = web.AppRunner(app, access_log=None, logger=ProtocolLog(log), **keepalive)
        self._server = None
        self._watch: asyncio.Task | None = None

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
        loop = asyncio.get_running_loop()
        self.loop_time = loop.time
        protocol = self._runner.server
        self._server = await loop.create_server(lambda: GuardedHttp(protocol(), self), sock=sock)
        if self.limits.watch_interval_s is not None:
            self._watch = asyncio.create_task(self.guard.watch())

    async def stop(self) -> None:
        self.feed.close()
        self.fault_counts.close()
        if self._watch is not None:
            self._watch.cancel()
        if self._server is not None:
            self._server.close()
        await self._runner.cleanup()

    async def _healthz(self, request: web.Request) -> web.Response:
        state = self.listeners()
        down = sorted(name for name, up in state.items() if not up)
        refusing = {c.config.broker_name: why for c in self.cores()
                    if not c.stopped and (why := c.write_refusal()) is not None}
        ready = not down and not refusing
        body = {"status": "ready" if ready else "not ready", "listeners": state}
        if down:
            body["down"] = down
        if refusing:
            body["store"] = refusing            # broker -> why its store refuses writes (a full disk)
        return web.json_response(body, status=200 if ready else 503)

    async def _metrics(self, request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(self.registry), headers={"Content-Type": CONTENT_TYPE_LATEST})


    # -- the dashboard -----------------------------------------------------------------------
    async def _page(self, request: web.Request) -> web.Response:
        return web.Response(text=PAGE, content_type="text/html")

    async def _state(self, request: web.Request) -> web.Response:
        return dashboard_api.timed(self.views.state)

    async def _events(self, request: web.Request) -> web.Response:
        try:
            after = int(request.query.get("after", "0"))
        except ValueError:
            return _error(400, "after is an event number (the seq of the last event seen)")
        return web.json_response(self.feed.after(after))

    async def _advance(self, request: web.Request) -> web.Response:
        from rocketmq_emulator.delay_scheduler import DelayLevelError, parse_duration

        body = await json_body(request)
        cores = self.cores()
        what = body.get("duration")
        if what == "next":
            due = next_due_ms([c for c in cores if not c.stopped])
            if due is None:
                return _error(409, "nothing is waiting for a delay: there is no next due message")
            ms = max(due - cores[0].clock.now_ms(), 0)
        elif isinstance(what, bool) or not isinstance(what, (str, int)):
            return _error(400, "duration is a text such as \"10s\" or \"next\", or a number of milliseconds")
        else:
            try:
                ms = parse_duration(what) if isinstance(what, str) else what
            except DelayLevelError as exc:
                return _error(400, f"duration: {exc}")
            if ms > _LONG_MAX - cores[0].clock.now_ms():
                return _error(400, "duration: the clock would pass the largest time a Java long holds")
        try:
            now = cores[0].advance_cluster_clock(ms)
        except (ClockError, ValueError) as exc:
            return _error(409, str(exc))
        cores[0].flush_cluster()
        return web.json_response({"now_ms": now, "advanced_ms": ms})

    async def _redrive(self, request: web.Request) -> web.Response:
        body = await json_body(request)
        group = body.get("group")
        if not isinstance(group, str) or not group:
            return _error(400, "a group is needed: {\"group\": \"billing\", \"all\": true}")
        ids = body.get("ids")
        if ids is None and body.get("all") is not True:
            return _error(400, "say which dead letters: \"ids\": [...] or \"all\": true")
        if ids is not None and (not isinstance(ids, list) or not all(isinstance(i, str) for i in ids)):
            return _error(400, "ids is a list of dead-letter ids (strings)")
        live = [c for c in self.cores() if not c.stopped]
        try:
            result = redrive(live, group, ids, dry_run=bool(body.get("dry_run")))
        except DeadLetterError as exc:
            return _error(409 if "no dead letters" in str(exc) else 400, str(exc))
        live[0].cluster_changed()
        return web.json_response(result.to_dict())


_LONG_MAX = (1 << 63) - 1               # times are Java longs on the wire and in the store


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


@web.middleware
async def _json_errors(request: web.Request, handler):
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return web.json_response({"error": exc.reason, "path": request.path}, status=exc.status)
    except ConnectionError:     # the client went away: the tracking middleware says so in one line
        raise
    except Exception:       # a bug answers 500 and is logged; the server goes on
        log.exception("HTTP %s %s failed", request.method, printable(request.path, 200))
        return web.Response(status=500, text=json.dumps({"error": "internal error"}),
                            content_type="application/json")
