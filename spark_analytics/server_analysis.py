"""Analyses run by the warm Spark server's supervisor, for a command that only asks.

The supervisor (``spark_server.serve``) is a Python process that stays, beside the
server's JVM: it has pyspark's Connect client, Arrow and matplotlib imported, and its
JVM has run an analysis already. ``analyze`` sends it the request (snapshot, report
directory, options) over a loopback socket, with the server's token, and prints what
comes back: progress lines, then the summary, or the error line and its exit code.
The command itself imports none of Spark, Arrow or matplotlib: on a warm server that
was a second of a few (benchmarks/analyze_warm.py).

    summary = spark_server.analyze_on_server(snapshot, out, progress=progress)   # None: no server runs

The supervisor runs each request on a Connect session of its own (concurrent ones one
after the other: the small-input settings are session confs, set under one lock per
process, ``sql_conf``). Its warm-up analysis runs here too. A request that comes while
the server starts is taken at once and waits for the JVM. One that comes during the
warm-up, for the same snapshot with the same options (``analyze`` run again, the usual
case), waits for the warm-up and gets its report, copied: the same analysis is not run
twice side by side on a cold JVM. One for anything else cancels the warm-up (it warms
the JVM just as well) rather than share the cores with it. A command that goes away
(Ctrl-C) cancels its analysis: no report appears after it.

Messages are JSON, one per line. Request: ``token``, ``snapshot`` and ``out`` (absolute
paths), ``delay_levels``, ``driver_read_max``. Answers: ``{"progress": line}`` any
number of times, then one of ``{"summary": ...}``, ``{"error": line, "exit_code": n}``,
``{"unavailable": why}`` (the server did not start: the command runs Spark itself) or
``{"defect": traceback}`` (a bug of ours, also in the supervisor's log).
"""
from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import sys
import threading
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from .errors import AnalyticsError, SnapshotError, spark_failure_line

__all__ = ["AnalysisService"]

MAX_REQUEST_BYTES = 1 << 16


# -- the supervisor's side -------------------------------------------------------------------

@dataclass(frozen=True)
class _Request:
    snapshot: str
    out: str
    delay_levels: str | None = None
    driver_read_max: int | None = None

    @property
    def key(self) -> tuple:
        """Requests with the same key get the same report."""
        return self.snapshot, self.delay_levels, self.driver_read_max


class _Cancelled(Exception):
    """An analysis stops between its steps when it was cancelled (``interruptAll``
    stops only the Spark operation running at that moment)."""


@dataclass
class _Job:
    """One analysis the supervisor runs, which can be cancelled: by its command going
    away (Ctrl-C: no report appears after it), or, the warm-up, by another request."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    session: object = None
    cancelled: bool = False
    over: bool = False                         # its session is stopped (or about to be)

    def cancel(self, why: str) -> None:
        with self.lock:
            if self.cancelled or self.over:
                return
            self.cancelled = True
            print(f"{self.what} is cancelled: {why}", file=sys.stderr, flush=True)
            if self.session is not None:
                self.session.interruptAll()

    def check(self) -> None:
        if self.cancelled:
            raise _Cancelled

    what = "an analysis"


@dataclass
class _WarmUp(_Job):
    request: _Request = None
    done: threading.Event = field(default_factory=threading.Event)
    summary: dict | None = None
    finished: bool = False
    attached: int = 0                          # requests waiting for its report, or copying it

    what = "the warm-up analysis"


class AnalysisService:
    """The supervisor's analysis port: a thread per connection, each request run on a
    Connect session of its own once the JVM answers (``ready``)."""

    def __init__(self, d: Path, port: int, token: str, busy, start_timeout_s: float) -> None:
        """``busy(d)``: the block during which an analysis counts the server busy;
        ``start_timeout_s``: how long a request waits for the JVM at most."""
        self.d = d
        self._token = token
        self._busy = busy
        self._start_timeout_s = start_timeout_s
        self._listener = socket.create_server(("127.0.0.1", port))
        self._url: str | None = None
        self._unavailable: str | None = None
        self._started = threading.Event()
        self._warm: _WarmUp | None = None
        self._session_lock = threading.Lock()
        threading.Thread(target=self._accept, name="analysis-accept", daemon=True).start()

    # the supervisor's calls

    def preload(self) -> None:
        """Import what an analysis needs (seconds of a cold Python's CPU), now."""
        import pyspark.sql.connect.session  # noqa: F401

        from . import charts, report  # noqa: F401

    def ready(self, url: str, warm_up: str | None = None) -> None:
        """The JVM answers at ``url``: run the requests, and analyse ``warm_up`` into a
        directory of the state's in the background (set up first: a request waiting for
        the JVM meets the warm-up, never runs beside it unknowingly)."""
        self._url = url
        if warm_up:
            warm = _WarmUp(request=_Request(warm_up, str(self.d / "warm-up")))
            self._warm = warm
            threading.Thread(target=self._run_warm_up, args=(warm,), name="warm-up", daemon=True).start()
        self._started.set()

    def unavailable(self, why: str) -> None:
        self._unavailable = why
        self._started.set()

    def warm_up_done(self) -> bool:
        return self._warm is None or self._warm.done.is_set()

    def close(self) -> None:
        self._listener.close()

    # the connections

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:                    # closed: the supervisor ends
                return
            threading.Thread(target=self._serve, args=(conn,), name="analysis", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                line = conn.makefile("rb").readline(MAX_REQUEST_BYTES)
                doc = json.loads(line)
                if not secrets.compare_digest(str(doc.get("token", "")), self._token):
                    return                     # not a client of ours: nothing to say
                request = _Request(str(doc["snapshot"]), str(doc["out"]), doc.get("delay_levels"),
                                   doc.get("driver_read_max"))
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                return
            send = _sender(conn)
            job = _Job()
            threading.Thread(target=_watch_hangup, args=(conn, job), name="analysis-hangup", daemon=True).start()
            try:
                answer = self._answer(request, send, job)
            except Exception:                  # a defect: in the log, and to the command
                traceback.print_exc()
                sys.stderr.flush()
                answer = {"defect": traceback.format_exc()}
            with job.lock:                     # (before the answer: the command then ends)
                job.over = True
            send(answer)
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)    # (wakes the hangup watcher's recv)

    def _answer(self, request: _Request, send, job: _Job) -> dict:
        if not self._started.wait(self._start_timeout_s) or self._unavailable is not None:
            return {"unavailable": self._unavailable or f"it did not answer within {self._start_timeout_s:g} s"}
        with self._busy(self.d):
            try:
                _check(request)
                if self._attach(request, send):
                    return {"summary": self._warm.summary}
                return {"summary": self._analyze(request, lambda msg: (job.check(), send({"progress": msg})), job)}
            except _Cancelled:
                return {"error": "cancelled", "exit_code": 1}    # (nobody reads it)
            except (AnalyticsError, SnapshotError) as exc:
                return {"error": str(exc), "exit_code": exc.exit_code}
            except Exception as exc:
                line = spark_failure_line(exc)
                if line is None and not job.cancelled:
                    raise
                return {"error": line or "cancelled", "exit_code": 1}

    # the warm-up and the requests that meet it

    def _attach(self, request: _Request, send) -> bool:
        """True when ``request`` got the warm-up's report (same snapshot and options);
        a request for anything else cancels a warm-up still running."""
        warm = self._warm
        if warm is None:
            return False
        with warm.lock:
            if warm.finished:
                return False
            if warm.request.key == request.key:
                warm.attached += 1
        if warm.request.key != request.key:
            warm.cancel("an analysis of another snapshot (or with other options) came")
            return False
        try:
            send({"progress": "the Spark server is warming up with an analysis of this snapshot: taking its report"})
            warm.done.wait()
            if warm.summary is None:           # it failed or was cancelled: run our own
                return False
            from .report import copy_report

            copy_report(warm.request.out, request.out)
            send({"progress": f"wrote {Path(request.out) / 'report.html'}, {Path(request.out) / 'summary.json'} "
                              f"and {Path(request.out) / 'aggregates'}/"})
            return True
        finally:
            with warm.lock:
                warm.attached -= 1
                last = warm.attached == 0
            if last:
                shutil.rmtree(warm.request.out, ignore_errors=True)

    def _run_warm_up(self, warm: _WarmUp) -> None:
        try:
            with self._busy(self.d):
                warm.summary = self._analyze(warm.request, lambda msg: warm.check(), warm)
        except _Cancelled:
            pass
        except Exception as exc:
            if not warm.cancelled:             # (a cancelled one fails in Spark: expected)
                print(f"the warm-up analysis failed: {spark_failure_line(exc) or ''}", file=sys.stderr)
                traceback.print_exc()
                sys.stderr.flush()
        finally:
            with warm.lock:
                warm.finished = True
                nobody = warm.attached == 0
            warm.done.set()
            if nobody:
                shutil.rmtree(warm.request.out, ignore_errors=True)

    def _analyze(self, request: _Request, progress, job: _Job) -> dict:
        from .report import analyze_snapshot
        from .session import build_remote_session

        with self._session_lock:               # (pyspark's session builder is one shared object)
            spark = build_remote_session(self._url, register_source=False)
        try:
            with job.lock:
                job.check()
                job.session = spark
            return analyze_snapshot(request.snapshot, request.out, spark=spark, delay_levels=request.delay_levels,
                                    driver_read_max=request.driver_read_max, progress=progress,
                                    ends_with_session=True)
        finally:
            with job.lock:
                job.over = True
            spark.stop()


def _check(request: _Request) -> None:
    """analyze's own checks, where the analysis runs (ValueError: a bad option, exit 2)."""
    from .checks import check_inputs

    try:
        check_inputs(request.snapshot, request.out, delay_levels=request.delay_levels)
    except ValueError as exc:
        raise AnalyticsError(str(exc)) from None


def _watch_hangup(conn: socket.socket, job: _Job) -> None:
    """Cancel ``job`` when its command goes away (it sends nothing after its request: an
    end of the stream is the command's end; after the answer, the job is over)."""
    try:
        while conn.recv(1024):
            pass
    except OSError:                            # (closed here, after the answer)
        pass
    job.cancel("its command went away")


def _sender(conn: socket.socket):
    """Send one message; a command that went away (Ctrl-C) is not an error here."""
    lock = threading.Lock()

    def send(msg: dict) -> None:
        data = json.dumps(msg, default=str).encode() + b"\n"
        with lock:
            try:
                conn.sendall(data)
            except OSError:
                pass
    return send
