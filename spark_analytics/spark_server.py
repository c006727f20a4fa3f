"""A warm Spark for the next analysis: a Spark Connect server that ``analyze`` leaves
running on 127.0.0.1, as Gradle leaves its daemon, so that later analyses skip Spark's
start and run on a JVM that has already compiled its planner.

    summary = analyze_on_server(snapshot, out, progress=progress)   # run by a server running or starting
    if summary is None:                        # none runs
        ...                                    # Spark in this process, as fast as it goes
        start_in_background(warm_up=snapshot)  # the server, for the next analysis
    stop_server()                              # analyze --stop-spark

The analysis that finds no server runs Spark in its own process and then starts the
server in the background, which warms itself up with an analysis of the same snapshot:
the next analysis finds a JVM that has run one already. Later analyses are run by the
supervisor, a Python process that stays (``server_analysis``): the command sends it
its request and prints what comes back. An analysis that comes while the server starts
or warms up sends its request all the same, and the supervisor runs it as soon as it
can (see ``server_analysis`` for how it meets the warm-up).

One server per user and Python environment (it runs this environment's Python for the
data source), found through a state directory (``state_dir``): ``server.json`` (its
port, its supervisor's analysis port, token, processes and status: starting, then
ready), ``lock`` (taken to find, start, replace or stop it), ``busy`` (held shared by
every analysis running on it),
``last_used`` (touched at each analysis' start and end), and the logs.

The server is a supervisor process (this module, ``python -m ...spark_server serve``),
detached from the terminal, and its child JVM (Spark's SparkConnectServer, local[*],
bound to 127.0.0.1, a random bearer token required). The supervisor stops the JVM when
no analysis has used it for the idle timeout (15 min unless ``analyze
--spark-idle-timeout`` said otherwise when it started), when it is told to (SIGTERM)
and, through the kernel, when the supervisor itself dies (PR_SET_PDEATHSIG). A server
that does not answer, whose processes are gone, or that was started by other code
(the package's files changed) is replaced.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .errors import AnalyticsError, SparkStartError

__all__ = ["DEFAULT_IDLE_TIMEOUT_S", "ServerState", "state_dir", "find_server", "analyze_on_server", "busy",
           "start_in_background", "stop_server", "running_server", "STATE_DIR_ENV"]

DEFAULT_IDLE_TIMEOUT_S = 15 * 60
STATE_DIR_ENV = "ROCKETMQ_EMULATOR_SPARK_SERVER_DIR"     # where the state lives (tests: a temp dir)
START_TIMEOUT_S = 180.0       # a cold JVM on a busy 2-core host answers in 10-30 s
STOP_TIMEOUT_S = 20.0
APP_NAME = "rocketmq-emulator-spark-server"
# The server's JVM: the quick compiler only (measured on a cold JVM: 10.5 s of CPU for a
# 4,590-record analysis instead of 21 s with C2 compiling beside it; warm, ~3.5 s either
# way) and the serial collector (warm: 3.1 s of CPU per analysis, G1 3.8 s, parallel 3.5 s),
# the driver's memory as analyze's own session.
JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
DRIVER_MEMORY = "2g"


@dataclass(frozen=True)
class ServerState:
    """What server.json says of a running server."""
    supervisor_pid: int
    jvm_pid: int
    port: int
    token: str
    code: str                  # fingerprint of the code the server's Python workers run
    idle_timeout_s: float
    started_at: float
    status: str = "ready"      # "starting" until it answers (jvm_pid 0 until then)
    warmed: bool = False       # its warm-up analysis is done
    service_port: int = 0      # where its supervisor takes analyses (server_analysis)

    @property
    def url(self) -> str:
        # "localhost": pyspark's Connect client then sends the token over a local channel
        # without TLS (it insists on TLS for any other host name)
        return f"sc://localhost:{self.port}/;token={self.token}"


def state_dir() -> Path:
    """This user's and this Python environment's server directory (private: 0700)."""
    explicit = os.environ.get(STATE_DIR_ENV)
    if explicit:
        return Path(explicit)
    uid = os.getuid() if hasattr(os, "getuid") else 0
    env = hashlib.sha1(os.path.realpath(sys.prefix).encode()).hexdigest()[:12]
    return Path(os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()) / f"rocketmq-emulator-{uid}" / \
        f"spark-server-{env}"


def code_fingerprint() -> str:
    """The package's files (names, sizes, modification times) and Python's and pyspark's
    versions: a server started before any of them changed runs other code."""
    import importlib.util

    here = Path(__file__).parent
    parts = [sys.version, str(importlib.util.find_spec("pyspark").origin)]
    for f in sorted(here.glob("*.py")):
        st = f.stat()
        parts.append(f"{f.name}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha1("\n".join(parts).encode()).hexdigest()[:16]


# -- the client side (analyze) -------------------------------------------------------------

@contextlib.contextmanager
def _locked(path: Path, shared: bool = False):
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)                           # (closing the file releases the lock)


def _read_state(d: Path) -> ServerState | None:
    try:
        return ServerState(**json.loads((d / "server.json").read_text()))
    except (OSError, ValueError, TypeError):
        return None


_EXEC_WAIT_S = 1.0      # how long a process may show an empty command line while it is exec'd


def _pid_alive(pid: int, marker: str) -> bool:
    """``pid`` runs and its command line holds ``marker`` (a reused pid does not). A
    process being exec'd — a supervisor just started — shows an empty command line for a
    moment (Popen returns before the kernel has set it): read again until it shows one;
    a zombie (empty for good) is not alive."""
    deadline = time.monotonic() + _EXEC_WAIT_S
    while True:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
            if cmdline:
                return marker.encode() in cmdline
            with open(f"/proc/{pid}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X"):
                    return False
        except (OSError, IndexError):
            return False
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.002)


def _answers(port: int, timeout: float = 2.0) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=timeout).close()
        return True
    except OSError:
        return False


def _healthy(state: ServerState, d: Path) -> str | None:
    """None when ``state`` is a server this code can use (or one starting); else why not."""
    if state.code != code_fingerprint():
        return "it was started by other code (the package changed since)"
    if not _pid_alive(state.supervisor_pid, str(d)):
        return f"its supervisor (pid {state.supervisor_pid}) is gone"
    if state.status == "starting":
        return None if time.time() - state.started_at < START_TIMEOUT_S else \
            f"it did not answer within {START_TIMEOUT_S:g} s of its start"
    if not _pid_alive(state.jvm_pid, f"spark.connect.grpc.binding.port={state.port}"):
        return f"its JVM (pid {state.jvm_pid}) is gone"
    if not _answers(state.port):
        return f"nothing answers on 127.0.0.1:{state.port}"
    return None


def running_server(d: Path | None = None) -> ServerState | None:
    """The server this code would use, if one is running, ready and healthy."""
    d = d or state_dir()
    state = _read_state(d)
    return state if state is not None and state.status == "ready" and _healthy(state, d) is None else None


def _kill(state: ServerState, d: Path, timeout: float = STOP_TIMEOUT_S) -> None:
    """Stop a server's processes (ours only: checked by command line), the supervisor
    first (it stops its JVM), then whatever is left."""
    procs = [(state.supervisor_pid, str(d)), (state.jvm_pid, f"spark.connect.grpc.binding.port={state.port}")]
    for pid, marker in procs:
        if _pid_alive(pid, marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_pid_alive(p, m) for p, m in procs):
        time.sleep(0.1)
    for pid, marker in procs:
        if _pid_alive(pid, marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _remove_state(d: Path) -> None:
    (d / "server.json").unlink(missing_ok=True)


def _touch(path: Path) -> None:
    path.touch()
    os.utime(path)


def _prepare_dir(d: Path) -> None:
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(d, 0o700)                         # holds the token


def _tail(path: Path) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""


def _write_state(d: Path, state: ServerState) -> None:
    tmp = d / f".server.json.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(asdict(state), f)
    os.replace(tmp, d / "server.json")


def _directory(d: Path | None = None) -> Path:
    d = d or state_dir()
    try:
        _prepare_dir(d)
    except OSError as exc:
        raise SparkStartError(f"cannot use the Spark server's directory {d}: {exc.strerror or exc} (or run with "
                              "--no-spark-server)") from None
    return d


def find_server(progress=lambda msg: None, d: Path | None = None, starting_too: bool = False) -> ServerState | None:
    """This environment's server, ready (after waiting for one that is starting, unless
    ``starting_too``: then at once), or None when none runs; a stale one is stopped and
    forgotten, in one progress line."""
    d = _directory(d)
    waited = False
    while True:
        with _locked(d / "lock"):
            state = _read_state(d)
            why = _healthy(state, d) if state is not None else None
            if state is not None and why is not None:
                progress(f"replacing the Spark server ({why})")
                _kill(state, d)
                _remove_state(d)
                return None
            if state is None or state.status == "ready" or starting_too:
                return state
        if not waited:                         # (_healthy bounds the wait: START_TIMEOUT_S)
            progress("waiting for the Spark server, which is starting")
            waited = True
        time.sleep(0.1)


@contextlib.contextmanager
def busy(d: Path):
    """Count an analysis running on the server (it is not idle) until the block ends."""
    import fcntl

    fd = os.open(d / "busy", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        with _locked(d / "lock"):              # the supervisor decides idleness under this lock
            fcntl.flock(fd, fcntl.LOCK_SH)
        _touch(d / "last_used")
        yield
    finally:
        _touch(d / "last_used")
        os.close(fd)


def analyze_on_server(snapshot: str, out: str, *, delay_levels: str | None = None,
                      driver_read_max: int | None = None, progress=lambda msg: None,
                      d: Path | None = None) -> dict | None:
    """Have this environment's warm server (ready, starting or warming up) analyse
    ``snapshot`` into ``out``; its summary, or None when no server runs or it could not
    start (the caller then runs Spark itself). Raises AnalyticsError or SnapshotError
    (one line, with the exit code the server gave) for what the analysis refused."""
    d = _directory(d)
    state = find_server(progress, d, starting_too=True)
    if state is None or not state.service_port:
        return None
    conn = _connect(state, d)
    if conn is None:
        return None
    if state.status == "starting":
        progress("waiting for the Spark server, which is starting")
    else:
        progress(f"connecting to the Spark server on 127.0.0.1:{state.port}")
    request = {"token": state.token, "snapshot": str(Path(snapshot).resolve()), "out": os.path.abspath(out),
               "delay_levels": delay_levels, "driver_read_max": driver_read_max}
    with conn, conn.makefile("rb") as answers:
        conn.sendall(json.dumps(request).encode() + b"\n")
        for line in answers:
            msg = json.loads(line)
            if "progress" in msg:
                progress(msg["progress"])
            elif "summary" in msg:
                return msg["summary"]
            elif "error" in msg:
                raise _refusal(msg["error"], msg["exit_code"])
            elif "unavailable" in msg:
                progress(f"the Spark server did not start ({msg['unavailable']})")
                return None
            elif "defect" in msg:
                raise RuntimeError(f"the Spark server's analysis failed:\n{msg['defect']}")
    raise SparkStartError(f"the Spark server (pid {state.supervisor_pid}) ended during the analysis; its log: "
                          f"{d / 'supervisor.log'}")


def _connect(state, d: Path) -> socket.socket | None:
    """A connection to the supervisor's analysis port; None when the supervisor is gone
    before it listens. (A supervisor just started binds it within a second.)"""
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            return socket.create_connection(("127.0.0.1", state.service_port), timeout=None)
        except OSError:
            if _healthy(state, d) is not None or time.monotonic() > deadline:
                return None
            time.sleep(0.05)


class _Refused(AnalyticsError):
    """An error line the server sent, with its exit code."""


def _refusal(line: str, exit_code: int) -> AnalyticsError:
    exc = _Refused(line)
    exc.exit_code = exit_code
    return exc


_TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"   # the server reads its token from there


def start_in_background(idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S, warm_up: str | None = None,
                        d: Path | None = None) -> ServerState | None:
    """Start this environment's server unless one runs or starts already (then None): a
    detached supervisor launches it and, once it answers, analyses the snapshot
    ``warm_up`` on it into a directory it then removes. Returns at once, with the
    server's state (status "starting")."""
    d = _directory(d)
    with _locked(d / "lock"):
        state = _read_state(d)
        if state is not None and _healthy(state, d) is None:
            return None
        if state is not None:
            _kill(state, d)
        (d / "start-error").unlink(missing_ok=True)
        port, service_port, token = _free_port(), _free_port(), secrets.token_hex(16)
        cmd = [sys.executable, "-m", __name__, "serve", str(d), "--idle-timeout", str(idle_timeout_s),
               "--port", str(port), "--service-port", str(service_port)] + (["--warm-up", warm_up] if warm_up else [])
        with open(d / "supervisor.log", "wb") as log:
            # (the token travels in the environment: a command line is anyone's to read)
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True, close_fds=True, env={**os.environ, _TOKEN_ENV: token})
        state = ServerState(proc.pid, 0, port, token, code_fingerprint(), idle_timeout_s, time.time(), "starting",
                            service_port=service_port)
        _write_state(d, state)
        return state


def stop_server(d: Path | None = None) -> ServerState | None:
    """Stop this environment's server; the state of the one stopped, or None if none was
    running (a stale state is cleaned up all the same)."""
    d = d or state_dir()
    if not d.exists():
        return None
    with _locked(d / "lock"):
        state = _read_state(d)
        if state is None:
            return None
        _remove_state(d)
    _kill(state, d)
    return state


# -- the supervisor ------------------------------------------------------------------------

def _spark_submit() -> str:
    import importlib.util

    home = Path(importlib.util.find_spec("pyspark").origin).parent
    return str(home / "bin" / "spark-submit")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    """In the JVM's process before exec: SIGTERM when the supervisor dies, however it dies."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM)              # PR_SET_PDEATHSIG


def serve(d: Path, idle_timeout_s: float, port: int, service_port: int, warm_up: str | None = None) -> int:
    """The supervisor: take analyses on ``service_port`` from the start (they wait for the
    JVM), start the JVM, mark server.json ready once it answers, warm it up with an
    analysis of ``warm_up``, and stop it when idle, told to, or when it died."""
    from .server_analysis import AnalysisService
    from .session import quiet_conf_dir

    stop = {"now": False}

    def on_signal(signum, frame):
        stop["now"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    token = os.environ.pop(_TOKEN_ENV, "")
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_CONF_DIR": quiet_conf_dir(),
           "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable, _TOKEN_ENV: token}
    env.pop("SPARK_REMOTE", None)
    service = AnalysisService(d, service_port, token, busy, START_TIMEOUT_S)
    jvm = _launch_jvm(d, port, env)
    try:
        service.preload()                      # the analysis' Python modules, while the JVM starts
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _answers(port, timeout=0.5) and jvm.poll() is None and not stop["now"] \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        if stop["now"] or jvm.poll() is not None or not _answers(port, timeout=0.5):
            if stop["now"]:
                why = "told to stop while starting"
            elif jvm.poll() is not None:
                why = f"its JVM exited with code {jvm.returncode} ({_tail(d / 'server.log') or 'no output'})"
            else:
                why = f"it did not answer within {START_TIMEOUT_S:g} s"
            (d / "start-error").write_text(why + "\n")
            service.unavailable(why)
            _end(jvm)
            with _locked(d / "lock"):
                _forget(d, os.getpid())
            return 1
        with _locked(d / "lock"):
            current = _read_state(d)
            if current is None or current.supervisor_pid != os.getpid():     # stopped meanwhile
                service.unavailable("it was stopped while starting")
                _end(jvm)
                return 1
            state = ServerState(**{**asdict(current), "jvm_pid": jvm.pid, "status": "ready"})
            _write_state(d, state)
            _touch(d / "last_used")
        service.ready(state.url, warm_up)
        warming = bool(warm_up)
        while not stop["now"] and jvm.poll() is None:
            time.sleep(0.5)
            if warming and service.warm_up_done():
                warming = False
                with _locked(d / "lock"):
                    current = _read_state(d)
                    if current is not None and current.supervisor_pid == os.getpid():
                        _write_state(d, ServerState(**{**asdict(current), "warmed": True}))
            if time.time() - (d / "last_used").stat().st_mtime < idle_timeout_s:
                continue
            with _locked(d / "lock"):          # no analysis is finding or starting us now
                if not _idle(d):
                    continue
                if time.time() - (d / "last_used").stat().st_mtime >= idle_timeout_s:
                    _forget(d, os.getpid())
                    break
    finally:
        service.close()
        _end(jvm)
        with _locked(d / "lock"):
            _forget(d, os.getpid())
    return 0


def _idle(d: Path) -> bool:
    """No analysis holds the busy lock (each holds it shared while it uses the server)."""
    import fcntl

    busy = os.open(d / "busy", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(busy, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(busy)


def _launch_jvm(d: Path, port: int, env: dict) -> subprocess.Popen:
    conf = {"spark.connect.grpc.binding.port": str(port), "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "4", "spark.sql.session.timeZone": "UTC",
            "spark.driver.extraJavaOptions": JAVA_OPTIONS}
    cmd = [_spark_submit(), "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
           "--name", APP_NAME, "--master", "local[*]", "--driver-memory", DRIVER_MEMORY]
    for k, v in conf.items():
        cmd += ["--conf", f"{k}={v}"]
    cmd.append("spark-internal")
    with open(d / "server.log", "wb") as log:
        return subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                preexec_fn=_die_with_parent, close_fds=True)


def _forget(d: Path, supervisor_pid: int) -> None:
    """Remove server.json if it still names this supervisor."""
    current = _read_state(d)
    if current is not None and current.supervisor_pid == supervisor_pid:
        _remove_state(d)


def _end(jvm: subprocess.Popen) -> None:
    if jvm.poll() is None:
        jvm.terminate()
        try:
            jvm.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            jvm.kill()
            jvm.wait(5)


def main(argv: list[str]) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m rocketmq_emulator.spark_analytics.spark_server")
    sub = p.add_subparsers(dest="command", required=True)
    serve_p = sub.add_parser("serve", help="run the server of STATE_DIR (analyze starts it)")
    serve_p.add_argument("state_dir", type=Path)
    serve_p.add_argument("--idle-timeout", type=float, default=DEFAULT_IDLE_TIMEOUT_S)
    serve_p.add_argument("--port", type=int, required=True)
    serve_p.add_argument("--service-port", type=int, required=True)
    serve_p.add_argument("--warm-up", default=None, metavar="SNAPSHOT")
    args = p.parse_args(argv)
    return serve(args.state_dir, args.idle_timeout, args.port, args.service_port, args.warm_up)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
