"""The dashboard's read-only JSON routes beyond ``/api/state`` (listener.py adds them with
``add_routes``), each a GET answered from dashboard.py's views; bad input is a 400 and
nothing there a 404, both ``{"error": "..."}``. The HTTP front's guard (guard.py: Host,
token, limits) stands before every one of them, as before every route.

  /api/clock                            the broker's clock: {"virtual", "now_ms"}
  /api/search?q=TEXT                    messages a message id, offset id, key or Pulsar
                                        message id names, in every topic of every broker
  /api/message?id=ID                    one message's life (broker/views/message_life.py)
  /api/consumers?dialect=D&q=&start=&limit=    4.x groups, 5.x groups or Pulsar subscriptions
  /api/group?name=G[&dialect=D]         one group: its retry ladder, queues, clients (default: its
                                        own dialect)
  /api/bar?group=G&dialect=D&step=N&which=waiting|passed|dead&start=&limit=
                                        the messages behind one bar of a ladder
  /api/waiting?group=&level=&start=&limit=     messages in the delay queue, soonest first
  /api/dead?group=G&start=&limit=       a group's dead letters, newest first
  /api/topics?q=&start=&limit=          topics and their messages
  /api/rates?seconds=&group=&topic=     produced, consumed, retried, dead-lettered per second

Pages are at most 500 rows (``limit``, default 50) from ``start`` (default 0). Each
answer says in a Server-Timing header how long its view took to compute.
"""
from __future__ import annotations

import time

from aiohttp import web

from .dashboard import DashboardViews, ViewError

__all__ = ["add_routes", "timed"]


def add_routes(router, views: DashboardViews) -> None:
    for path, view in _ROUTES.items():
        router.add_get(path, _handler(view, views))


def _handler(view, views: DashboardViews):
    async def handle(request: web.Request) -> web.Response:
        try:
            return timed(lambda: view(views, request.query))
        except ViewError as exc:
            return web.json_response({"error": str(exc)}, status=exc.status)
    return handle


def timed(view) -> web.Response:
    """``view()`` as JSON, with the time it took to compute in a Server-Timing header:
    ``view;dur=ms`` (from its start to its end) and ``cpu;dur=ms`` (the CPU time of this
    thread meanwhile: without the time the OS gave other processes). What the view costs,
    apart from the wait for the loop it shares with every front; browsers' developer tools
    and benchmarks/dashboard_latency.py read it."""
    t0, c0 = time.perf_counter(), time.thread_time()
    doc = view()
    ms, cpu = (time.perf_counter() - t0) * 1000, (time.thread_time() - c0) * 1000
    return web.json_response(doc, headers={"Server-Timing": f"view;dur={ms:.2f}, cpu;dur={cpu:.2f}"})


def _int(query, name: str, default: int | None, low: int = 0, high: int = 1 << 31) -> int | None:
    text = query.get(name)
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise ViewError(400, f"{name} is a whole number, not {text!r}") from None
    if not low <= value <= high:
        raise ViewError(400, f"{name} must be from {low} to {high}, got {value}")
    return value


def _text(query, name: str, default: str | None = None) -> str | None:
    value = query.get(name, default)
    if value is None:
        raise ViewError(400, f"{name} is needed")
    return value


def _page(query) -> tuple[int, int]:
    return _int(query, "start", 0), _int(query, "limit", 50, 0, 500)


_ROUTES = {
    "/api/clock": lambda v, q: v.clock(),
    "/api/search": lambda v, q: v.search(_text(q, "q", "")),
    "/api/message": lambda v, q: v.message(_text(q, "id", "")),
    "/api/consumers": lambda v, q: v.consumers(_text(q, "dialect", "4.x"), q.get("q", ""), *_page(q)),
    "/api/group": lambda v, q: v.group(_text(q, "name"), q.get("dialect")),
    "/api/bar": lambda v, q: v.bar(_text(q, "group"), _text(q, "dialect", "4.x"), _int(q, "step", None, 0, 1 << 16),
                                   _text(q, "which", "waiting"), *_page(q)),
    "/api/waiting": lambda v, q: v.waiting(q.get("group"), _int(q, "level", None, 1, 1000), *_page(q)),
    "/api/dead": lambda v, q: v.dead(_text(q, "group"), *_page(q)),
    "/api/topics": lambda v, q: v.topics(q.get("q", ""), *_page(q)),
    "/api/rates": lambda v, q: v.rates(_int(q, "seconds", 300, 1, 3600), q.get("group"), q.get("topic")),
}
