"""The HTTP front's defences (issue 34, items 1 and 3): who may ask, and what a
connection may hold.

Who may ask (``access_middleware``), in this order:

* ``Host`` must name this server: 127.0.0.1, localhost, [::1], the ``--host`` it binds
  (with a wildcard, the machine's own addresses) or an ``--http-allowed-host``; any
  other name gets 421. A page on evil.example whose name is made to resolve to
  127.0.0.1 (DNS rebinding) reaches the port but reads nothing.
* A token, when there is one (``--http-token``, or made up when ``--host`` is not
  loopback): every endpoint but ``/healthz`` wants ``Authorization: Bearer TOKEN`` (what
  a Prometheus scrape config sends) or the cookie a browser gets from opening a page
  with ``?token=TOKEN`` once (HttpOnly, SameSite=Strict: other sites' requests do not
  carry it); else 401.
* A request that changes something (any method but GET, HEAD, OPTIONS) must come from
  this server's own origin — an ``Origin`` header other than ``http://<Host>``, or a
  browser's ``Sec-Fetch-Site`` saying another site, gets 403 — and carry
  ``Content-Type: application/json`` (else 415): a page elsewhere can send a form or a
  text/plain fetch without asking, but a JSON body needs a CORS preflight, which this
  server grants no one.

What a connection may hold (``GuardedHttp``, with connection_guard.py's limits): at
most ``max_connections`` of them; the first request's head within
``handshake_timeout_s`` of the accept; each request, head and body, within
``frame_timeout_s`` of its first byte; no byte for ``idle_timeout_s`` between requests;
bodies of at most MAX_BODY bytes (413). Each refusal is one WARNING line.
"""
from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
import secrets
from dataclasses import dataclass

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from ...log_text import printable
from ...adapters.advertise import is_wildcard, local_addresses
from ...adapters.connection_guard import LimitedConnection

__all__ = ["HttpAccess", "access_for", "access_middleware", "tracking_middleware", "json_body", "GuardedHttp",
           "ProtocolLog", "MAX_BODY", "TOKEN_COOKIE", "is_loopback"]

log = logging.getLogger("broker.http")

MAX_BODY = 1024 * 1024                  # aiohttp's client_max_size: a larger body is answered 413
TOKEN_COOKIE = "rocketmq_emulator_token"
_LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_OPEN_PATHS = frozenset({"/healthz"})


@dataclass(frozen=True)
class HttpAccess:
    hosts: frozenset[str]               # what Host may name: lower case, no port, IPv6 without brackets
    token: str | None = None            # wanted by every endpoint but /healthz (None: none is)


def is_loopback(host: str) -> bool:
    if host.strip().lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def access_for(bind_host: str, allowed_hosts=(), token: str | None = None, *,
               addresses: tuple[list[str], list[str]] | None = None) -> tuple[HttpAccess, bool]:
    """The access rules of an HTTP front bound to ``bind_host``, and whether the token
    was made up here (bound beyond loopback without one given: the caller prints it)."""
    hosts = set(_LOOPBACK_NAMES)
    hosts.update(host_name(h) for h in allowed_hosts)
    if is_wildcard(bind_host):
        ipv4, ipv6 = addresses if addresses is not None else local_addresses()
        hosts.update(host_name(a) for a in [*ipv4, *ipv6])
    else:
        hosts.add(host_name(bind_host))
    made = token is None and not is_loopback(bind_host)
    if made:
        token = secrets.token_urlsafe(24)
    return HttpAccess(frozenset(hosts), token), made


def host_name(text: str) -> str:
    """The name part of a Host header (or a name given on the command line): no port,
    no brackets around an IPv6 address, no trailing dot, lower case."""
    text = text.strip().lower()
    if text.startswith("["):
        text = text[1:].partition("]")[0]
    elif text.count(":") == 1:
        text = text.partition(":")[0]
    return text.rstrip(".")


def _refused(request: web.Request, status: int, why: str) -> web.Response:
    return web.json_response({"error": why}, status=status)


def _token_of(request: web.Request) -> tuple[str | None, bool]:
    """The token a request carries, and whether it came in the query (a browser's first
    visit: the answer sets the cookie)."""
    auth = request.headers.get("Authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip(), False
    if TOKEN_COOKIE in request.cookies:
        return request.cookies[TOKEN_COOKIE], False
    if "token" in request.query:
        return request.query["token"], True
    return None, False


def access_middleware(access: HttpAccess, bodiless_paths: tuple[str, ...] = ()):
    """``bodiless_paths``: path prefixes (Pulsar's admin API) where a change may also come
    with no Content-Type at all (``curl -X PUT``, as Pulsar takes it); a form or text
    body is still 415, and Origin and Sec-Fetch-Site are checked as everywhere."""
    @web.middleware
    async def check(request: web.Request, handler):
        host = request.headers.get("Host")
        if host is not None and host_name(host) not in access.hosts:
            return _refused(request, 421, f"Host {printable(host, 100)!r} is not a name this server answers to "
                                          f"(DNS rebinding?); serve --http-allowed-host NAME adds one")
        from_query = False
        if access.token is not None and request.path not in _OPEN_PATHS:
            given, from_query = _token_of(request)
            if given is None or not hmac.compare_digest(given.encode(), access.token.encode()):
                response = _refused(request, 401, "a token is needed: Authorization: Bearer TOKEN, or open the "
                                                  "dashboard once with ?token=TOKEN (serve printed it at start-up)")
                response.headers["WWW-Authenticate"] = "Bearer"
                return response
        if request.method not in _SAFE_METHODS:
            origin = request.headers.get("Origin")
            site = request.headers.get("Sec-Fetch-Site", "")
            if origin is not None and (host is None or origin.lower() != f"http://{host}".lower()):
                return _refused(request, 403, f"Origin {printable(origin, 100)!r} is not this server's: only the "
                                              f"dashboard itself may change anything (CSRF)")
            if site in ("cross-site", "same-site"):
                return _refused(request, 403, f"a request from another site (Sec-Fetch-Site: {printable(site)}) "
                                              f"may not change anything (CSRF)")
            if request.content_type != "application/json" and not (
                    "Content-Type" not in request.headers and request.path.startswith(bodiless_paths)):
                return _refused(request, 415, f"the body must be application/json, not "
                                              f"{printable(request.content_type or 'none', 100)}")
        response = await handler(request)
        if from_query:
            response.set_cookie(TOKEN_COOKIE, access.token, httponly=True, samesite="Strict", path="/")
        return response
    return check


class GuardedHttp(asyncio.Protocol, LimitedConnection):
    """aiohttp's protocol for one connection (``inner``), with the connection guard's
    limits around it; the tracking middleware tells it when a request's head has been
    read (``began``) and when it has been answered (``done``)."""

    handshake_missing = "no whole request head"
    frame_word = "request"

    def __init__(self, inner, server) -> None:
        self.inner = inner
        self.server = server
        self.transport = None
        self.admitted = False
        self.in_request = False
        self.received = 0                   # bytes of the request under way

    def connection_made(self, transport) -> None:
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.remote = f"{peer[0]}:{peer[1]}" if peer else "?"
        if not self.server.guard.admit(self, self.server.loop_time()):
            transport.abort()
            return
        self.admitted = True
        self.server.guarded[self.inner] = self
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        now = self.last_io = self.server.loop_time()
        if self.frame_started is None:
            self.frame_started, self.received = now, 0
        self.received += len(data)
        self.inner.data_received(data)

    def eof_received(self):
        return self.inner.eof_received()

    def connection_lost(self, exc) -> None:
        if not self.admitted:
            return
        self.server.guard.release(self)
        self.server.guarded.pop(self.inner, None)
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def began(self) -> None:
        self.in_request = True
        self.handshaken = True
        if not self.served:
            self.server.guard.mark_served(self)

    def done(self) -> None:
        self.in_request = False
        self.frame_started = None
        self.last_io = self.server.loop_time()

    # -- what the connection guard reads ---------------------------------------------------------
    def unfinished_bytes(self) -> int:
        return self.received

    def drop(self) -> None:
        self.transport.abort()


class ProtocolLog:
    """The logger aiohttp's protocol is given: a request it could not parse, which it
    reports with a traceback, becomes one WARNING line saying what was wrong; anything
    else it reports (a failure of ours) keeps its traceback."""

    def __init__(self, logger: logging.Logger) -> None:
        self.logger = logger

    def exception(self, msg, *args, exc_info=True, **kwargs) -> None:
        exc = exc_info if isinstance(exc_info, BaseException) else None
        if isinstance(exc, HttpProcessingError):
            self.logger.warning(msg + ": a malformed request (%s)", *args, printable(exc, 200))
        else:
            self.logger.error(msg, *args, exc_info=exc_info, **kwargs)

    def __getattr__(self, name):            # debug, info, warning, error: as they are
        return getattr(self.logger, name)


def tracking_middleware(server):
    """Tells each request's connection when its head was read and when it was answered.
    A request refused (4xx) is one WARNING line with why; one whose client went away
    before its body ended is one too."""
    @web.middleware
    async def track(request: web.Request, handler):
        conn = server.guarded.get(request.protocol)
        if conn is not None:
            conn.began()
        try:
            response = await handler(request)
            if 400 <= response.status < 500:
                log.warning("answered %d to %s %s from %s: %s", response.status, request.method,
                            printable(request.path, 200), printable(request.remote or "?"), _why(response))
            return response
        except ConnectionError:
            log.warning("%s %s from %s: the connection was lost before the request's body ended",
                        request.method, printable(request.path, 200), printable(request.remote or "?"))
            return web.Response(status=400)
        finally:
            if conn is not None:
                conn.done()
    return track


def _why(response) -> str:
    try:
        doc = json.loads(response.body)
        return printable(doc.get("error") or doc["reason"], 300)     # (Pulsar's admin API says "reason")
    except Exception:                   # (not one of our JSON errors: say what the status says)
        return response.reason or ""


async def json_body(request: web.Request) -> dict:
    """The request's JSON object; anything else (not JSON, nested past Python's limit,
    not an object) is a 400, a body over MAX_BODY a 413 (at once when Content-Length
    says so: the client need not send it)."""
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise web.HTTPRequestEntityTooLarge(max_size=MAX_BODY, actual_size=request.content_length)
    raw = await request.read()
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise web.HTTPBadRequest(reason="the body is not JSON") from None
    except RecursionError:
        raise web.HTTPBadRequest(reason="the body is JSON nested too deeply") from None
    if not isinstance(body, dict):
        raise web.HTTPBadRequest(reason="the body is a JSON object")
    return body
