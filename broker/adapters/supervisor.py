"""Watches what ``serve`` cannot run without, so that nothing fails silently.

A background task of the server (the MQTT bridge, the real-time flush of a
virtual-clock server, the remoting server's own tasks) that ends with an exception, and
an exception raised in a loop callback (the remoting server's timer, which ticks the
core: delayed delivery, hold expiry, flush), would otherwise be logged at best and the
server would go on without it — no bridge, no flush. Here each is logged with its
traceback and stops the server: ``failure`` is then the one line ``serve`` prints
before it exits non-zero. An exception inside one connection's protocol is that
connection's end (asyncio closes it); it is logged and the server goes on.
"""
from __future__ import annotations

import asyncio
import logging

__all__ = ["Supervisor"]

log = logging.getLogger("broker.serve")


class Supervisor:
    def __init__(self) -> None:
        self.stop = asyncio.Event()          # set by a signal or by a failure
        self.failure: str | None = None
        self._watched: set[asyncio.Task] = set()

    def fail(self, what: str, exc: BaseException) -> None:
        log.error("%s failed; stopping the server", what, exc_info=exc)
        if self.failure is None:
            self.failure = f"{what} failed: {type(exc).__name__}: {exc}"
        self.stop.set()

    def watch(self, task: asyncio.Task, what: str) -> asyncio.Task:
        """``task`` must run until the server stops (or ``release``): any other end is a failure."""
        self._watched.add(task)

        def done(t: asyncio.Task) -> None:
            if t not in self._watched:
                return
            self._watched.discard(t)
            if t.cancelled():
                if not self.stop.is_set():
                    self.fail(what, RuntimeError("cancelled while the server was running"))
                return
            exc = t.exception()
            if exc is not None:
                self.fail(what, exc)
            elif not self.stop.is_set():
                self.fail(what, RuntimeError("ended while the server was running"))
        task.add_done_callback(done)
        return task

    def release(self, task: asyncio.Task) -> None:
        """``task`` may end from now on (a cluster broker being stopped cancels its own)."""
        self._watched.discard(task)

    def watch_start(self, task: asyncio.Task, what: str) -> asyncio.Task:
        """``task`` is a start that must finish without an exception."""
        def done(t: asyncio.Task) -> None:
            if not t.cancelled() and t.exception() is not None:
                self.fail(what, t.exception())
        task.add_done_callback(done)
        return task

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        """Route the loop's unhandled exceptions here."""
        loop.set_exception_handler(self._loop_exception)

    def _loop_exception(self, loop, context: dict) -> None:
        exc = context.get("exception")
        if exc is None or "transport" in context or "protocol" in context or "socket" in context:
            # One connection's error (asyncio closes it), or the listener's own retry
            # after e.g. running out of file descriptors: logged, the server goes on.
            loop.default_exception_handler(context)
            return
        message = context.get("message") or "unhandled exception"
        if message.startswith("Exception in callback "):
            self.fail(f"the loop callback {message[len('Exception in callback '):]}", exc)
        else:
            self.fail(f"a background task ({message})", exc)
