"""What one client may hold of a listener, the same for every byte-stream front (remoting,
Pulsar, HTTP; DESIGN.md: every front has the same defences). Each limit acts with one
log line, on the loop's clock (real time, also under a virtual clock); 0 turns it off.

* ``max_connections``: connections open at once, per listener. At the limit, the oldest
  connection that has never sent a whole request is closed to admit the new one (silent
  sockets cannot lock real clients out); when every open connection has sent one, the
  new one is closed as soon as it is accepted (one line per REFUSAL_LOG_INTERVAL_S of
  refusals).
* ``handshake_timeout_s``: a connection must begin within this long of its accept: the
  remoting front wants its first byte, the Pulsar front a CONNECT, the HTTP front a
  whole request head.
* ``frame_timeout_s``: a frame (HTTP: a request) still unfinished this long after its
  first byte closes the connection; its partial bytes are what a stalled client makes
  the server hold.
* ``idle_timeout_s``: no byte in either direction for this long closes the connection
  (RocketMQ's serverChannelMaxIdleTimeSeconds, 120); one waiting on the server (a held
  pull) is not idle.
* ``max_outgoing_buffer``: the bytes a connection may leave unread; each front says
  what it does at the bound (remoting: stops reading its requests; Pulsar: stops
  pushing messages to it at a quarter of it).
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from ..log_text import printable

__all__ = ["ConnectionLimits", "LimitedConnection", "ConnectionGuard", "DEFAULT_MAX_CONNECTIONS",
           "DEFAULT_HANDSHAKE_TIMEOUT_S", "DEFAULT_IDLE_TIMEOUT_S", "DEFAULT_FRAME_TIMEOUT_S",
           "DEFAULT_MAX_OUTGOING_BUFFER", "DEFAULT_MAX_PENDING_BYTES", "REFUSAL_LOG_INTERVAL_S"]

DEFAULT_MAX_CONNECTIONS = 1000
DEFAULT_HANDSHAKE_TIMEOUT_S = 10.0
DEFAULT_IDLE_TIMEOUT_S = 120.0              # RocketMQ's serverChannelMaxIdleTimeSeconds
DEFAULT_FRAME_TIMEOUT_S = 30.0
DEFAULT_MAX_OUTGOING_BUFFER = 16 * 1024 * 1024
# What all the Pulsar front's connections together may hold unsent (--pulsar-max-pending-bytes):
# sixteen stalled consumers at their own bound, a quarter of DEFAULT_MAX_OUTGOING_BUFFER.
DEFAULT_MAX_PENDING_BYTES = 64 * 1024 * 1024
# A flood of refused connections is told in one line per this many seconds, not one per
# connection: the log must not become what the flood exhausts.
REFUSAL_LOG_INTERVAL_S = 10.0


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    handshake_timeout_s: float = DEFAULT_HANDSHAKE_TIMEOUT_S
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S
    frame_timeout_s: float = DEFAULT_FRAME_TIMEOUT_S
    max_outgoing_buffer: int = DEFAULT_MAX_OUTGOING_BUFFER

    def __post_init__(self) -> None:
        for name in ("max_connections", "handshake_timeout_s", "idle_timeout_s", "frame_timeout_s",
                     "max_outgoing_buffer"):
            value = getattr(self, name)
            if value < 0:
                raise ValueError(f"{name} must be >= 0 (0 = no limit), got {value}")

    @property
    def watch_interval_s(self) -> float | None:
        """How often the timeouts are checked (None: no timeout is on): a quarter of the
        shortest, so a connection is closed at most 25 % late."""
        timeouts = [t for t in (self.handshake_timeout_s, self.idle_timeout_s, self.frame_timeout_s) if t]
        if not timeouts and not self.max_connections:
            return None
        return min(max(min([*timeouts, 4.0]) / 4, 0.05), 1.0)


class LimitedConnection:
    """What the guard reads of a front's connection; the front keeps it up to date.
    (A mix-in: the defaults are class attributes until the front sets its own.)"""

    remote = "?"
    accepted_at = 0.0
    last_io = 0.0                       # loop time of the last byte read or written
    handshaken = False                  # began as its protocol wants (see handshake_timeout_s)
    served = False                      # sent a whole request at least once
    frame_started: float | None = None  # loop time the unfinished frame (request) began
    handshake_missing = "nothing received"
    frame_word = "frame"

    def busy(self) -> bool:
        """Waiting on the server (a held pull): not idle."""
        return False

    def unfinished_bytes(self) -> int:
        return 0

    def drop(self) -> None:
        """Close the connection now (it is over a limit)."""
        raise NotImplementedError


class ConnectionGuard:
    """The open connections of one listener, in accept order, and the limits on them."""

    def __init__(self, limits: ConnectionLimits, logger: logging.Logger) -> None:
        self.limits = limits
        self.log = logger
        self.open: dict[LimitedConnection, None] = {}
        self._unserved: dict[LimitedConnection, None] = {}     # never sent a request, oldest first
        self._refused_unlogged = 0
        self._refusal_logged_at: float | None = None

    def __len__(self) -> int:
        return len(self.open)

    def admit(self, conn: LimitedConnection, now: float) -> bool:
        """Take in a connection just accepted (False: it is over the limit; the caller
        closes it at once). Makes room by closing the oldest one that never sent a
        request, if there is one."""
        conn.accepted_at = conn.last_io = now
        cap = self.limits.max_connections
        if cap and len(self.open) >= cap:
            victim = next(iter(self._unserved), None)
            if victim is None:
                self._refuse(conn.remote, now)
                return False
            self.release(victim)
            self.log.warning("closing %s to admit %s: it is the oldest of the connections that never sent a "
                             "request, and %d are open (max connections)", printable(victim.remote),
                             printable(conn.remote), cap)
            victim.drop()
        self.open[conn] = None
        self._unserved[conn] = None
        return True

    def mark_served(self, conn: LimitedConnection) -> None:
        """``conn`` sent a whole request: it is no longer the first to be evicted."""
        conn.served = True
        self._unserved.pop(conn, None)

    def release(self, conn: LimitedConnection) -> None:
        self.open.pop(conn, None)
        self._unserved.pop(conn, None)

    def check(self, now: float) -> None:
        """Close every connection past a timeout, one line each."""
        for conn in list(self.open):
            reason = self.overdue(conn, now)
            if reason is not None:
                self.release(conn)
                self.log.warning("closing %s: %s", printable(conn.remote), reason)
                conn.drop()
        self._log_refusal_count(now)

    def overdue(self, conn: LimitedConnection, now: float) -> str | None:
        limits = self.limits
        if limits.handshake_timeout_s and not conn.handshaken and now - conn.accepted_at >= limits.handshake_timeout_s:
            return f"{conn.handshake_missing} within {limits.handshake_timeout_s:g} s of accept (handshake timeout)"
        started = conn.frame_started
        if limits.frame_timeout_s and started is not None and now - started >= limits.frame_timeout_s:
            return (f"a {conn.frame_word} still unfinished {now - started:.0f} s after its first byte "
                    f"({conn.unfinished_bytes()} bytes of it received; frame timeout {limits.frame_timeout_s:g} s)")
        if limits.idle_timeout_s and not conn.busy() and now - conn.last_io >= limits.idle_timeout_s:
            return f"idle for {now - conn.last_io:.0f} s (idle timeout {limits.idle_timeout_s:g} s)"
        return None

    async def watch(self) -> None:
        """Check the timeouts until cancelled (a task of the listener's)."""
        interval = self.limits.watch_interval_s
        if interval is None:
            return
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(interval)
            try:
                self.check(loop.time())
            except Exception:       # a bug here must not end the watch for good
                self.log.exception("connection watch failed; it goes on")

    def _refuse(self, remote: str, now: float) -> None:
        """Log a connection refused for being over ``max_connections``: the first of a
        burst at once, the rest counted into one line per REFUSAL_LOG_INTERVAL_S."""
        if self._refusal_logged_at is not None and now - self._refusal_logged_at < REFUSAL_LOG_INTERVAL_S:
            self._refused_unlogged += 1
            return
        self._refusal_logged_at = now
        self.log.warning("refusing connection from %s: %d connections open, the maximum (max connections), and "
                         "each has sent a request; further refusals are counted, one line per %.0f s",
                         printable(remote), len(self.open), REFUSAL_LOG_INTERVAL_S)

    def _log_refusal_count(self, now: float) -> None:
        if self._refused_unlogged and now - self._refusal_logged_at >= REFUSAL_LOG_INTERVAL_S:
            self.log.warning("%d more connections over the maximum of %d were closed in the last %.0f s",
                             self._refused_unlogged, self.limits.max_connections, now - self._refusal_logged_at)
            self._refused_unlogged = 0
            self._refusal_logged_at = now
