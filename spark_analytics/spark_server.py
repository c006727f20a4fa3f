"""A warm Spark for the next analysis: a Spark Connect server that ``analyze`` leaves
running on 127.0.0.1, as Gradle leaves its daemon, so that later analyses skip Spark's
start and run on a JVM that has already compiled its planner.

    with warm_session(progress) as spark:      # uses the running server, or starts one
        ...
    stop_server()                              # analyze --stop-spark

One server per user and Python environment (it runs this environment's Python for the
data source), found through a state directory (``state_dir``): ``server.json`` (its
port, token and processes, written once it answers), ``lock`` (taken to find, start,
replace or stop it), ``busy`` (held shared by every analysis using it) and ``last_used``
(touched at each analysis' start and end), and ``server.log``.

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

from .errors import SparkStartError

__all__ = ["DEFAULT_IDLE_TIMEOUT_S", "ServerState", "state_dir", "warm_session", "stop_server", "running_server",
           "STATE_DIR_ENV"]

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


def _pid_alive(pid: int, marker: str) -> bool:
    """``pid`` runs and its command line holds ``marker`` (a reused pid does not)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return marker.encode() in f.read()
    except OSError:
        return False


def _answers(port: int, timeout: float = 2.0) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=timeout).close()
        return True
    except OSError:
        return False


def _healthy(state: ServerState, d: Path) -> str | None:
    """None when ``state`` is a server this code can use; else why not."""
    if state.code != code_fingerprint():
        return "it was started by other code (the package changed since)"
    if not _pid_alive(state.supervisor_pid, str(d)):
        return f"its supervisor (pid {state.supervisor_pid}) is gone"
    if not _pid_alive(state.jvm_pid, f"spark.connect.grpc.binding.port={state.port}"):
        return f"its JVM (pid {state.jvm_pid}) is gone"
    if not _answers(state.port):
        return f"nothing answers on 127.0.0.1:{state.port}"
    return None


def running_server(d: Path | None = None) -> ServerState | None:
    """The server this code would use, if one is running and healthy."""
    d = d or state_dir()
    state = _read_state(d)
    return state if state is not None and _healthy(state, d) is None else None


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


def _start(d: Path, idle_timeout_s: float, progress) -> ServerState:
    """Start the supervisor (detached) and wait until its server answers."""
    (d / "start-error").unlink(missing_ok=True)
    log = open(d / "supervisor.log", "wb")
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", __name__, "serve", str(d), "--idle-timeout", str(idle_timeout_s)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            close_fds=True)
    finally:
        log.close()
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        state = _read_state(d)
        if state is not None and state.supervisor_pid == proc.pid:
            return state
        if proc.poll() is not None:
            why = _tail(d / "start-error") or _tail(d / "supervisor.log") or f"exit code {proc.returncode}"
            raise SparkStartError(f"the Spark server did not start: {why}")
        time.sleep(0.05)
    _kill(ServerState(proc.pid, -1, -1, "", "", 0, 0), d)
    raise SparkStartError(f"the Spark server did not answer within {START_TIMEOUT_S:g} s (its log: "
                          f"{d / 'server.log'})")


def _tail(path: Path) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""


@contextlib.contextmanager
def warm_session(progress=lambda msg: None, idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S, say=None,
                 while_starting=None, conf: dict[str, str] | None = None):
    """A Spark Connect session on this environment's warm server, started (and a line
    said through ``say``) when none runs; a stale one is replaced first. The server
    counts as busy (not idle) until the block ends. ``while_starting``: work to do in
    this process while a new server starts (it takes seconds); ``conf``: the session's
    settings."""
    from .session import build_remote_session

    d = state_dir()
    _prepare_dir(d)
    say = say or progress
    busy = os.open(d / "busy", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        with _locked(d / "lock"):
            state = _read_state(d)
            why = _healthy(state, d) if state is not None else None
            if state is not None and why is not None:
                progress(f"replacing the Spark server ({why})")
                _kill(state, d)
                _remove_state(d)
                state = None
            started = state is None
            if started:
                progress("starting a Spark server for this and later analyses")
                launched = time.monotonic()
                pending = _start_async(d, idle_timeout_s)
                if while_starting is not None:
                    while_starting()
                state = pending()
                say(f"started a Spark server for later analyses (127.0.0.1:{state.port}, pid {state.jvm_pid}; "
                    f"it stops after {_human(state.idle_timeout_s)} unused; to stop it now: "
                    "rocketmq-emulator analyze --stop-spark)")
                progress(f"Spark server ready after {time.monotonic() - launched:.1f} s")
            import fcntl

            fcntl.flock(busy, fcntl.LOCK_SH)   # before the lock goes: the supervisor sees us
        _touch(d / "last_used")
        if not started and while_starting is not None:
            while_starting()
        progress(f"connecting to the Spark server on 127.0.0.1:{state.port}")
        spark = build_remote_session(state.url, register_source=False, conf=conf)
        try:
            yield spark
        finally:
            with contextlib.suppress(Exception):   # the server ends the session's state
                spark.stop()
            _touch(d / "last_used")
    finally:
        os.close(busy)


def _start_async(d: Path, idle_timeout_s: float):
    """Launch the supervisor now; the returned function waits for its server."""
    result: dict = {}
    import threading

    def run():
        try:
            result["state"] = _start(d, idle_timeout_s, None)
        except BaseException as exc:           # raised again by the caller
            result["error"] = exc

    t = threading.Thread(target=run, name="spark-server-start", daemon=True)
    t.start()

    def wait() -> ServerState:
        t.join()
        if "error" in result:
            raise result["error"]
        return result["state"]
    return wait


def _human(seconds: float) -> str:
    if seconds >= 60 and seconds % 60 == 0:
        return f"{int(seconds // 60)} min"
    return f"{seconds:g} s"


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


def serve(d: Path, idle_timeout_s: float) -> int:
    """The supervisor: start the JVM, publish server.json once it answers, stop it when
    idle, told to, or when it died."""
    import fcntl

    from .session import quiet_conf_dir

    stop = {"now": False}

    def on_signal(signum, frame):
        stop["now"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    token = secrets.token_hex(16)
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_CONF_DIR": quiet_conf_dir(),
           "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           # (read by the server; not on its command line, which other users can see)
           "SPARK_CONNECT_AUTHENTICATE_TOKEN": token}
    env.pop("SPARK_REMOTE", None)
    code = code_fingerprint()
    deadline = time.monotonic() + START_TIMEOUT_S
    for attempt in range(3):                   # (another process may take the free port first)
        port = _free_port()
        jvm = _launch_jvm(d, port, env)
        while not _answers(port, timeout=0.5) and jvm.poll() is None and not stop["now"] \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        if jvm.poll() is None or stop["now"] or time.monotonic() >= deadline:
            break
    if stop["now"] or jvm.poll() is not None or not _answers(port, timeout=0.5):
        if stop["now"]:
            why = "told to stop while starting"
        elif jvm.poll() is not None:
            why = f"its JVM exited with code {jvm.returncode} ({_tail(d / 'server.log') or 'no output'})"
        else:
            why = f"it did not answer within {START_TIMEOUT_S:g} s"
        (d / "start-error").write_text(why + "\n")
        _end(jvm)
        return 1
    state = ServerState(os.getpid(), jvm.pid, port, token, code, idle_timeout_s, time.time())
    _touch(d / "last_used")
    tmp = d / f".server.json.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(asdict(state), f)
    os.replace(tmp, d / "server.json")
    try:
        while not stop["now"] and jvm.poll() is None:
            time.sleep(1.0)
            if time.time() - (d / "last_used").stat().st_mtime < idle_timeout_s:
                continue
            with _locked(d / "lock"):          # no analysis is finding or starting us now
                busy = os.open(d / "busy", os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    fcntl.flock(busy, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:                # an analysis holds it: not idle
                    continue
                finally:
                    os.close(busy)
                if time.time() - (d / "last_used").stat().st_mtime >= idle_timeout_s:
                    _forget(d, state)
                    break
    finally:
        _end(jvm)
        with _locked(d / "lock"):
            _forget(d, state)
    return 0


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


def _forget(d: Path, state: ServerState) -> None:
    """Remove server.json if it still names this supervisor."""
    current = _read_state(d)
    if current is not None and current.supervisor_pid == state.supervisor_pid:
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
    if len(argv) >= 2 and argv[0] == "serve":
        timeout = float(argv[argv.index("--idle-timeout") + 1]) if "--idle-timeout" in argv else \
            DEFAULT_IDLE_TIMEOUT_S
        return serve(Path(argv[1]), timeout)
    print("usage: python -m rocketmq_emulator.spark_analytics.spark_server serve STATE_DIR [--idle-timeout S]",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
