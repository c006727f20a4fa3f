"""The one way this project builds a SparkSession (settings measured in tech-check §1).

Loopback only (SPARK_LOCAL_IP, driver host and bind address 127.0.0.1), no UI on port
4040, no console progress bars, 4 shuffle partitions instead of 200 (pure overhead on
a laptop), errors-only logging, workers on this interpreter (the venv that has pyarrow),
and the commit-log data source registered. ``local[*]`` unless a master URL is given;
any URL (spark://, yarn, k8s://) is passed through untouched.
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

__all__ = ["build_session", "DEFAULT_MASTER", "quiet_conf_dir"]

DEFAULT_MASTER = "local[*]"

_LOG4J2 = """\
# Written by spark_analytics.session: Spark logs errors only.
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
"""


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


def build_session(master: str | None = None, *, app_name: str = "rocketmq-emulator-analytics",
                  driver_memory: str = "2g", shuffle_partitions: int = 4, conf: dict[str, str] | None = None):
    """Get (or create) the SparkSession with the project's settings and the
    ``rocketmq-commitlog`` data source registered. Settings that need a fresh JVM
    (driver memory) only apply to the first session of the process."""
    # Before the JVM starts: these are read from the environment by spark-submit.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_CONF_DIR", quiet_conf_dir())
    from pyspark.sql import SparkSession

    from .datasource import CommitLogDataSource

    builder = (
        SparkSession.builder.master(master or DEFAULT_MASTER)
        .appName(app_name)
        .config("spark.driver.memory", driver_memory)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.session.timeZone", "UTC")
    )
    for k, v in (conf or {}).items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(CommitLogDataSource)
    return spark
