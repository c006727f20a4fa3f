"""The errors of spark_analytics: each carries one line meant for a person, and the
exit code the command ends with (2: bad usage or input; 1: a failure while running)."""
from __future__ import annotations

from rocketmq_emulator.store.errors import SnapshotError   # (the store's: a snapshot is its format)

__all__ = ["AnalyticsError", "ClusterLostError", "SnapshotError", "SparkStartError", "spark_failure_line"]


class AnalyticsError(Exception):
    """Something the user can fix (bad path, bad option); str() is one readable line."""

    exit_code = 2


class SparkStartError(AnalyticsError):
    """Spark did not start: its JVM exited, or the master did not take the application."""

    exit_code = 1


class ClusterLostError(AnalyticsError):
    """The cluster went away while Spark ran the analysis (watchdog.py)."""

    exit_code = 1


def spark_failure_line(exc: BaseException) -> str | None:
    """One line for a failure raised out of Spark while it ran the analysis (a failed
    job, a file it could not read): the Java exception's message without its stack, or
    None when ``exc`` did not come from Spark."""
    try:
        from py4j.protocol import Py4JError
        from pyspark.errors import PySparkException
    except ImportError:
        return None
    if not isinstance(exc, (Py4JError, PySparkException)):
        return None
    text = str(exc)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    # Py4JJavaError: "An error occurred while calling oNN.method.\n: java.Exception: message\n\tat ..."
    java = next((ln[1:].strip() for ln in lines if ln.startswith(": ")), None)
    # a gRPC failure of Spark Connect: "<_InactiveRpcError of RPC ...\n status = ...\n details = "...""
    status = next((ln.split("=", 1)[1].strip() for ln in lines if ln.startswith("status = ")), None)
    details = next((ln.split("=", 1)[1].strip().strip('"') for ln in lines if ln.startswith("details = ")), None)
    grpc = f"the Spark Connect server answered {status}: {details}" if details else None
    first = java or grpc or (lines[0] if lines else type(exc).__name__)
    first = first.replace("org.apache.spark.SparkException: ", "")
    hint = ""
    if "FAILED_READ_FILE" in first and "/columnar/" in first:
        # the derived Parquet is damaged (the log is not): it is written again when it is gone
        hint = (" (the snapshot's columnar form is damaged; remove its columnar/ directory and it is written "
                "again from the commit log)")
    return f"Spark failed while running the analysis: {first}{hint}"
