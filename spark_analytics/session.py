"""The one way this project builds a SparkSession (settings measured in tech-check §1).

Loopback only (SPARK_LOCAL_IP, driver host and bind address 127.0.0.1), no UI on port
4040, no console progress bars, 4 shuffle partitions instead of 200 (pure overhead on
a laptop), errors-only logging, workers on this interpreter (the venv that has pyarrow),
and the commit-log data source registered. ``local[*]`` unless a master URL is given;
any URL Spark accepts (spark://, yarn, k8s://) is passed through untouched.

Starting is checked and bounded: the master URL, Java and a standalone master's port
are checked before the JVM starts (``preflight``); the JVM's start-up output is held
back and, if Spark does not start, summed up in one line (``SparkStartError``); a
standalone master gets ``start_timeout`` seconds to take the application instead of
Spark's own minute of retries.
"""
from __future__ import annotations

import os
import re
import sys
import tempfile
import threading
from pathlib import Path

from .errors import SparkStartError
from .preflight import check_master, find_java, probe_master, standalone_addresses
from .sql_conf import session_conf

__all__ = ["build_session", "build_remote_session", "register_source", "DEFAULT_MASTER", "START_TIMEOUT_S", "quiet_conf_dir", "session_conf", "SMALL_INPUT_SQL_CONF",
           "SMALL_INPUT_JAVA_OPTIONS"]

DEFAULT_MASTER = "local[*]"
START_TIMEOUT_S = 20.0        # a standalone master takes an application in about a second (local init ~2 s)

_LOG4J2 = """\
# Written by spark_analytics.session: Spark logs errors only.
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
# A shell's main class sets the console level; without a level of its own Spark
# prints 'Setting default log level to "WARN"' at every start. PySpark's is the gateway.
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
logger.pygateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.pygateway.level = error
"""

# Printed by the JVM itself (not log4j) at every start, because Spark's launcher adds
# --add-modules=jdk.incubator.vector; nothing a user can act on.
_JVM_NOTICES = (re.compile(rb"^WARNING: Using incubator modules: "),)


# For an input of a few thousand to ~100k rows Spark's fixed costs are the run: a stage
# per exchange, a job per broadcast and per adaptive stage, Janino compiling code that
# then runs for a millisecond. Set per analysis by report.analyze_snapshot, never for a
# large input (there codegen and parallelism pay). With the analysis' input in one
# partition (jobs._one_partition) these let Spark plan no exchange at all: the 13 tables
# of a 4,590-record snapshot in 3 stages (75 before, benchmarks/analyze_stages.py).
SMALL_INPUT_SQL_CONF = {
    "spark.sql.shuffle.partitions": "1",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    # One-partition inputs need no exchange, unless Spark estimates them too big for one
    # task (128 MiB): it multiplies the inputs' sizes across a join, and takes an RDD of
    # unknown size for 8 EiB, so a 1 MiB log's joins were shuffled "for parallelism".
    "spark.sql.maxSinglePartitionBytes": str(1 << 62),
    "spark.sql.defaultSizeInBytes": "1",
    # The union of the tables: a partition per table, not all of them in one task
    "spark.sql.unionOutputPartitioning": "false",
}
# The JVM's quick compiler only: C2 compiling Spark's planner on a second core is
# time a run of seconds never gets back; and the serial collector, whose one thread
# costs less than G1's concurrent ones for a heap this size (measured: a cold 4,590-record
# analysis 10.4-12.4 s of CPU with G1, 9.7-11.1 s with it). Applies to a JVM this process starts.
SMALL_INPUT_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

def quiet_conf_dir() -> str:
    """A SPARK_CONF_DIR holding an errors-only log4j2.properties. Written at run time
    (not shipped as package data) so an installed wheel needs nothing extra."""
    d = Path(tempfile.gettempdir()) / f"rocketmq-emulator-spark-conf-{os.getuid() if hasattr(os, 'getuid') else 0}"
    d.mkdir(parents=True, exist_ok=True)
    f = d / "log4j2.properties"
    if not f.exists() or f.read_text() != _LOG4J2:
        tmp = d / f".log4j2.{os.getpid()}"
        tmp.write_text(_LOG4J2)
        os.replace(tmp, f)
    return str(d)


class _StderrRelay(threading.Thread):
    """Copies the JVM's stderr to ours (fd 2, as if it wrote there itself), minus the
    JVM's start-up notices. Until ``release`` the lines are held, so a start that fails
    ends in one line made from them (``summary``) instead of a Java stack trace."""

    def __init__(self, pipe) -> None:
        super().__init__(name="spark-jvm-stderr", daemon=True)
        self._pipe = pipe
        self._lock = threading.Lock()
        self._held: list[bytes] | None = []

    def run(self) -> None:
        for line in iter(self._pipe.readline, b""):
            if any(n.match(line) for n in _JVM_NOTICES):
                continue
            with self._lock:
                if self._held is not None:
                    self._held.append(line)
                    continue
            _write_stderr(line)

    def release(self) -> None:
        """Start-up went well: let anything held (and all that follows) through."""
        with self._lock:                       # held lines first, in order
            for line in self._held or ():
                _write_stderr(line)
            self._held = None

    def summary(self) -> str:
        """What the held output says went wrong: its Java exception line if it has one,
        else its first lines joined; '' when there was none."""
        with self._lock:
            lines = [ln.decode("utf-8", "replace").strip() for ln in self._held or ()]
        lines = [ln for ln in lines if ln]
        for ln in lines:
            if _JAVA_EXCEPTION.search(ln) and not ln.startswith("at "):
                return re.sub(r'^Exception in thread "[^"]*"\s*', "", ln)
        return " / ".join(lines[:3])


_JAVA_EXCEPTION = re.compile(r"[\w.$]+(Exception|Error)\b")


def _write_stderr(line: bytes) -> None:
    try:
        os.write(2, line)
    except OSError:
        pass


def _launch_gateway(settings: dict[str, str]):
    """Start the JVM the way pyspark would (spark-submit with these --conf settings),
    its stderr into a pipe read by a relay from the first byte. Returns (gateway, relay)."""
    from pyspark import SparkConf
    from pyspark.java_gateway import launch_gateway

    conf = SparkConf(loadDefaults=False)
    conf.setAll(list(settings.items()))
    read_fd, write_fd = os.pipe()
    relay = _StderrRelay(os.fdopen(read_fd, "rb"))
    relay.start()
    try:
        gateway = launch_gateway(conf, popen_kwargs={"stderr": write_fd})
    except Exception:
        os.close(write_fd)
        relay.join(timeout=5)                  # the JVM is gone: the pipe ends
        raise SparkStartError(_start_failure(relay.summary())) from None
    os.close(write_fd)                         # the JVM holds its own copy
    return gateway, relay


def _start_failure(detail: str) -> str:
    msg = "Spark's JVM exited while starting"
    if detail:
        msg += f": {detail}"
    if "UnsupportedClassVersionError" in detail:
        msg += " (Spark 4 needs Java 17 or later; set JAVA_HOME to one)"
    return msg


def _start_context_bounded(settings: dict[str, str], master: str, timeout: float) -> None:
    """Create the SparkContext (where a standalone master registers the application)
    in a helper thread, waiting at most ``timeout`` seconds for it. The session is then
    made on the calling thread (its active-session state is per thread)."""
    from pyspark import SparkConf, SparkContext

    result: dict = {}

    def create():
        try:
            SparkContext.getOrCreate(SparkConf().setAll(list(settings.items())))
        except BaseException as exc:           # reported by the caller, not by the thread
            result["error"] = exc

    t = threading.Thread(target=create, name="spark-context-start", daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        raise SparkStartError(f"the Spark master {master} did not take the application within {timeout:g} s "
                              "(is it a Spark master, and its RPC port, usually 7077?)")
    if "error" in result:
        raise result["error"]


def _stop_jvm(gateway) -> None:
    """Kill a JVM we started and forget it, so nothing waits on it at exit."""
    from pyspark import SparkContext

    proc = getattr(gateway, "proc", None)
    if proc is not None:
        proc.kill()
    try:
        gateway.shutdown()
    except Exception:                          # the JVM is gone; its sockets may already be closed
        pass
    SparkContext._gateway = None
    SparkContext._jvm = None
    SparkContext._active_spark_context = None


def build_session(master: str | None = None, *, app_name: str = "rocketmq-emulator-analytics",
                  driver_memory: str = "2g", shuffle_partitions: int = 4, conf: dict[str, str] | None = None,
                  start_timeout: float | None = START_TIMEOUT_S):
    """Get (or create) the SparkSession with the project's settings and the
    ``rocketmq-commitlog`` data source registered. Settings that need a fresh JVM
    (driver memory) only apply to the first session of the process. Raises
    AnalyticsError (one line) when Spark cannot start: see the module notes."""
    master = master or DEFAULT_MASTER
    # Before the JVM starts: these are read from the environment by spark-submit.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_CONF_DIR", quiet_conf_dir())
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from .datasource import CommitLogDataSource

    settings = {
        "spark.master": master,
        "spark.app.name": app_name,
        "spark.driver.memory": driver_memory,
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.session.timeZone": "UTC",
        **(conf or {}),
    }
    builder = SparkSession.builder
    for k, v in settings.items():
        builder = builder.config(k, v)
    gateway = relay = None
    if SparkContext._active_spark_context is None:
        check_master(master)
        probe_master(master)
        if SparkContext._gateway is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
            find_java()
            gateway, relay = _launch_gateway(settings)
            # pyspark's own hook for a gateway started elsewhere: the context adopts it
            SparkContext._ensure_initialized(gateway=gateway)
    try:
        if gateway is not None and start_timeout is not None and standalone_addresses(master):
            _start_context_bounded(settings, master, start_timeout)
        spark = builder.getOrCreate()
    except SparkStartError:
        if gateway is not None:
            _stop_jvm(gateway)
        raise
    except Exception as exc:
        detail = relay.summary() if relay is not None else ""
        if gateway is not None:
            _stop_jvm(gateway)
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise SparkStartError(f"Spark did not start: {detail or first}") from None
    if relay is not None:
        relay.release()
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(CommitLogDataSource)
    return spark


def build_remote_session(remote: str, *, register_source: bool = True, conf: dict[str, str] | None = None):
    """A Spark Connect session on the server at ``remote`` (sc://HOST:PORT) with the
    ``rocketmq-commitlog`` data source registered there (``register_source``; else
    ``register_source`` does it when it is needed): the class travels to the server,
    whose Python workers run it, so this package must be importable by the server's
    Python (PYSPARK_PYTHON), and paths are read where the server runs. ``conf``: session
    settings, sent with the session's creation. Raises SparkStartError (one line) when
    the server does not answer."""
    from pyspark.sql import SparkSession

    try:
        builder = SparkSession.builder.remote(remote).config("spark.sql.session.timeZone", "UTC")
        for k, v in (conf or {}).items():
            builder = builder.config(k, v)
        spark = builder.create()
        if register_source:
            spark.dataSource.register(_data_source())
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        shown = re.sub(r";token=[^;/\s]+", ";token=…", remote)
        raise SparkStartError(f"the Spark Connect server {shown} did not take the session: {first}") from None
    return spark


def register_source(spark) -> None:
    """Register the ``rocketmq-commitlog`` data source with ``spark`` (again: harmless)."""
    spark.dataSource.register(_data_source())


def _data_source():
    from .datasource import CommitLogDataSource

    return CommitLogDataSource


def is_remote(spark) -> bool:
    """A Spark Connect session (no SparkContext, no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")
