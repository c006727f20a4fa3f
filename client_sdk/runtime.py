"""The client runtime: one loop that owns time for every client on one clock.

Theory of operation
-------------------
RocketMQ's Java client runs pull, consume, rebalance and timer threads. Here all of
that is *tasks* on one loop, so a run on a VirtualClock is single-threaded and
deterministic:

- ``call_soon(fn, *args)`` queues a task (FIFO); ``call_later(ms, ...)`` / ``call_at``
  arm a timer; ``call_every`` a periodic timer (offset persistence, rebalance, ...).
- *sources* are things with their own deadlines — the in-process broker hub reports
  ``core.next_deadline()`` and ticks the core — so the loop moves the broker too.
- ``run_until_idle()`` runs every task, due timer and due source tick until nothing is
  runnable *without moving time*: pulls answered, listeners run, results handled.
- ``advance("10s")`` (VirtualClock) moves the clock deadline by deadline — every timer
  and every broker deadline on the way — running everything due at each stop, so
  delayed retries, long-poll timeouts, the 5 s local retry, orderly suspension and the
  periodic offset commits all happen at their exact virtual times.
- On a SystemClock ``advance``/``run_for`` wait in real time between deadlines (in the
  calling thread); another thread (e.g. a TCP transport's reader) hands work to the
  loop with ``call_soon_threadsafe``, which also wakes a waiting loop.

A task that raises is logged and, once the outermost run call finishes, re-raised to
the caller (a strict consumer reports a listener's bad return value this way). A
listener may itself call ``advance`` (a "slow listener"): runs nest.
"""
from __future__ import annotations

import heapq
import itertools
import logging
import os
import threading
from collections import deque
from typing import Any, Callable, Protocol

from rocketmq_emulator.delay_scheduler import Clock, parse_duration

from .uniq_key import UniqKeyGenerator

__all__ = ["ClientRuntime", "Timer", "TimeSource", "to_millis"]

log = logging.getLogger("client_sdk.runtime")

# How long a real-time run_until works through tasks before it looks at its predicate
# and timeout again, when tasks keep coming.
REAL_TIME_SLICE_MS = 50


def to_millis(duration: int | float | str) -> int:
    """``"10s"``, ``"2h"``, ``"1h30m"``, ``"500ms"`` or a number of milliseconds."""
    if isinstance(duration, str):
        return parse_duration(duration)
    if isinstance(duration, bool) or not isinstance(duration, (int, float)):
        raise TypeError(f"a duration is a string like '10s' or milliseconds, not {duration!r}")
    if duration < 0:
        raise ValueError(f"a duration cannot be negative: {duration}")
    return int(duration)


class TimeSource(Protocol):
    """Something with deadlines of its own that the loop must honour (the broker hub)."""

    def next_deadline(self) -> int | None: ...

    def tick(self) -> None: ...


class Timer:
    """A handle to a scheduled call; ``cancel()`` stops it (periodic ones too)."""

    __slots__ = ("due", "fn", "args", "cancelled", "interval", "quiet")

    def __init__(self, due: int, fn: Callable, args: tuple, interval: int | None = None,
                 quiet: tuple | None = None) -> None:
        self.due = due
        self.fn = fn
        self.args = args
        self.cancelled = False
        self.interval = interval
        # What this timer is, for skipping idle spans (``transport.idle_skip``): e.g.
        # ("heartbeat", instance). None: an ordinary timer, never skipped over.
        self.quiet = quiet

    def cancel(self) -> None:
        self.cancelled = True

    def __repr__(self) -> str:
        state = "cancelled" if self.cancelled else f"due={self.due}"
        return f"Timer({getattr(self.fn, '__qualname__', self.fn)}, {state})"


class ClientRuntime:
    """The loop. One per clock; every client on that clock shares it.

    ``ip`` and ``pid`` feed client ids and UNIQ_KEY message ids (``uniq_keys``).
    """

    def __init__(self, clock: Clock, *, ip: str = "127.0.0.1", pid: int | None = None) -> None:
        self.clock = clock
        self.virtual = bool(getattr(clock, "is_virtual", False))
        self.ip = ip
        self.pid = os.getpid() if pid is None else pid
        self.uniq_keys = UniqKeyGenerator(ip, self.pid)
        self._ready: deque[tuple[Callable, tuple]] = deque()
        self._timers: list[tuple[int, int, Timer]] = []
        self._seq = itertools.count()
        self._sources: list[TimeSource] = []
        self._errors: list[BaseException] = []
        self._depth = 0
        self._instances = itertools.count(1)
        self._wake = threading.Condition()
        # Client instances on this loop (for the idle skipper) and the skipper itself:
        # ``idle_skipper(limit_ms)`` may carry settled periodic work forward to just
        # before ``limit_ms`` (see ``transport.idle_skip``); None on a real clock.
        self.clients: list = []
        self.idle_skipper: Callable[[int], None] | None = None

    # -- identity ----------------------------------------------------------------------
    def new_instance_name(self) -> str:
        """RocketMQ turns instanceName DEFAULT into "<pid>#<nanoTime>"; a counter keeps
        client ids distinct within a process and reproducible across runs."""
        return f"{self.pid}#{next(self._instances)}"

    def now_ms(self) -> int:
        return self.clock.now_ms()

    # -- scheduling --------------------------------------------------------------------
    def call_soon(self, fn: Callable, *args: Any) -> None:
        self._ready.append((fn, args))

    def call_soon_threadsafe(self, fn: Callable, *args: Any) -> None:
        """From another thread: queue ``fn`` and wake a loop waiting in real time."""
        with self._wake:
            self._ready.append((fn, args))
            self._wake.notify_all()

    def call_at(self, due_ms: int, fn: Callable, *args: Any) -> Timer:
        return self.schedule(Timer(int(due_ms), fn, args))

    def schedule(self, t: Timer) -> Timer:
        """Arm a ready Timer at ``t.due`` (after every timer armed before it, at equal due)."""
        heapq.heappush(self._timers, (t.due, next(self._seq), t))
        return t

    def call_later(self, delay_ms: int, fn: Callable, *args: Any) -> Timer:
        return self.call_at(self.clock.now_ms() + int(delay_ms), fn, *args)

    def call_every(self, interval_ms: int, fn: Callable, *args: Any, first_delay_ms: int | None = None,
                   quiet: tuple | None = None) -> Timer:
        """Run ``fn`` every ``interval_ms`` (scheduleAtFixedRate); cancel the returned Timer to stop.
        ``quiet`` names the job for the idle skipper (see ``Timer.quiet``)."""
        if interval_ms <= 0:
            raise ValueError(f"interval must be > 0 ms, got {interval_ms}")
        delay = interval_ms if first_delay_ms is None else first_delay_ms
        return self.schedule(Timer(self.clock.now_ms() + int(delay), fn, args, int(interval_ms), quiet))

    def add_source(self, source: TimeSource) -> None:
        if source not in self._sources:
            self._sources.append(source)

    def remove_source(self, source: TimeSource) -> None:
        if source in self._sources:
            self._sources.remove(source)

    def next_deadline(self) -> int | None:
        """The earliest pending timer or source deadline (None: nothing scheduled)."""
        timers = self._timers
        while timers and timers[0][2].cancelled:
            heapq.heappop(timers)
        best = timers[0][0] if timers else None
        for s in self._sources:
            d = s.next_deadline()
            if d is not None and (best is None or d < best):
                best = d
        return best

    @property
    def pending(self) -> int:
        """Queued tasks plus live timers (periodic ones included)."""
        return len(self._ready) + sum(1 for _, _, t in self._timers if not t.cancelled)

    # -- running -------------------------------------------------------------------------
    def run_until_idle(self) -> None:
        """Run everything runnable at the current time, including what that produces."""
        self._depth += 1
        try:
            self._drain()
        finally:
            self._depth -= 1
        self._raise_errors()

    def advance(self, duration: int | str) -> int:
        """Move time forward by ``duration`` ("10s", "2h", or ms), stopping at every
        deadline on the way and running what is due there. Returns the new time.
        On a SystemClock this waits in real time (``run_for``)."""
        ms = to_millis(duration)
        if not self.virtual:
            self.run_for(ms)
            return self.clock.now_ms()
        clock = self.clock
        target = clock.now_ms() + ms
        self._depth += 1
        try:
            now = self._drain()
            last = None
            skip = self.idle_skipper
            while True:
                if skip is not None and not self._ready:
                    skip(target + 1)            # (it moves timers, never the clock)
                d = self.next_deadline()
                if d is None or d > target:
                    break
                if now is None:
                    now = clock.now_ms()
                if d <= now and last == (d, now):
                    # A source keeps reporting a deadline it cannot clear; step past it
                    # rather than spin.
                    log.warning("deadline %s did not clear at %s; stepping 1 ms", d, now)
                    d = now + 1
                last = (d, now)
                clock.advance_to(d)
                now = self._drain()
            clock.advance_to(target)
            self._drain()
        finally:
            self._depth -= 1
        self._raise_errors()
        return clock.now_ms()

    def advance_to(self, t_ms: int) -> int:
        return self.advance(max(0, int(t_ms) - self.clock.now_ms()))

    def run_for(self, duration: int | str) -> None:
        """Run the loop for ``duration``: virtual time moves at once; real time is waited."""
        ms = to_millis(duration)
        if self.virtual:
            self.advance(ms)
            return
        end = self.clock.now_ms() + ms
        self.run_until(lambda: False, end_ms=end)

    def run_until(self, predicate: Callable[[], bool], timeout: int | str = "30s", *,
                  end_ms: int | None = None) -> bool:
        """Run until ``predicate()`` is true or ``timeout`` passes (virtual or real).
        Returns the predicate's last value."""
        if end_ms is None:
            end_ms = self.clock.now_ms() + to_millis(timeout)
        self._depth += 1
        # On virtual time the predicate is checked once the current instant has no work
        # left, so what a run leaves behind does not depend on when it is checked. On
        # real time work may never run out (responses keep arriving from the network),
        # so a drain also ends after a slice of real time, to check the predicate and
        # the timeout.
        virtual = self.virtual
        try:
            while True:
                if virtual:
                    self._drain()
                else:
                    self._drain(min(end_ms, self.clock.now_ms() + REAL_TIME_SLICE_MS))
                if predicate():
                    return True
                now = self.clock.now_ms()
                if now >= end_ms:
                    return False
                d = self.next_deadline()
                stop = end_ms if d is None else min(d, end_ms)
                if virtual:
                    self.clock.advance_to(max(stop, now))
                    continue
                with self._wake:
                    if not self._ready:
                        self._wake.wait(max(0.0, (stop - now) / 1000.0))
        finally:
            self._depth -= 1
            if self._depth == 0 and self._errors:
                self._raise_errors()

    def _drain(self, stop_ms: int | None = None) -> int | None:
        """Run until nothing is ready or due at the current time; time does not move.
        With ``stop_ms`` (real time) tasks run in rounds (those ready at the start of a
        round; what they queue waits for the next one), and the drain also ends once
        the clock reaches ``stop_ms`` after a round. Returns the clock's time when it
        ended with nothing to run (None otherwise): what ``advance`` would read next."""
        ready = self._ready
        timers = self._timers
        clock = self.clock
        idle_ticks = 0
        while True:
            now = clock.now_ms()
            ticked = False
            for s in self._sources:
                d = s.next_deadline()
                if d is not None and d <= now:
                    s.tick()
                    ticked = True
            while timers and timers[0][0] <= now:
                t = heapq.heappop(timers)[2]
                if t.cancelled:
                    continue
                if t.interval is not None:
                    t.due = now + t.interval
                    heapq.heappush(timers, (t.due, next(self._seq), t))
                ready.append((t.fn, t.args))
            if not ready:
                if not ticked:
                    return now
                idle_ticks += 1
                if idle_ticks > 2:
                    return
                continue
            idle_ticks = 0
            if stop_ms is None:                 # the whole chain (virtual time's hot loop)
                while ready:
                    fn, args = ready.popleft()
                    try:
                        fn(*args)
                    except Exception as exc:
                        self._task_failed(fn, exc)
            else:
                for _ in range(len(ready)):     # one round
                    fn, args = ready.popleft()
                    try:
                        fn(*args)
                    except Exception as exc:
                        self._task_failed(fn, exc)
                if clock.now_ms() >= stop_ms:
                    return

    def _task_failed(self, fn: Callable, exc: Exception) -> None:
        log.exception("client task %s failed", getattr(fn, "__qualname__", fn))
        self._errors.append(exc)

    def _raise_errors(self) -> None:
        if self._depth or not self._errors:
            return
        errors, self._errors = self._errors, []
        first = errors[0]
        if len(errors) > 1:
            first.add_note(f"({len(errors) - 1} more client task error(s) were logged)")
        raise first
