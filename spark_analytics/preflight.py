"""Checks made before Spark starts, each failing with one line a person can act on:
the extra is installed, the master URL parses, Java is there, a standalone master
answers on its port. Standard library only (a JVM start costs seconds; these cost
milliseconds), so ``analyze`` can refuse bad input before paying for one.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import socket
from pathlib import Path

from .errors import AnalyticsError

__all__ = ["ANALYTICS_MODULES", "JAVA_HINT", "missing_analytics_module", "check_master",
           "find_java", "standalone_addresses", "probe_master", "check_out_dir", "check_remote", "probe_remote"]

# What the analytics extra adds (pyproject.toml).
ANALYTICS_MODULES = ("pyspark", "pyarrow", "numpy", "matplotlib", "pandas", "zstandard")
JAVA_HINT = "install Java 17 or later, e.g. `apt-get install default-jre-headless`, or set JAVA_HOME"

# The master URLs Spark itself accepts (SparkSubmit, SparkContext.createTaskScheduler).
_MASTER_FORMS = (
    re.compile(r"local(\[(\d+|\*)(\s*,\s*\d+)?\])?"),
    re.compile(r"local-cluster\[\s*\d+\s*,\s*\d+\s*,\s*\d+\s*\]"),
    re.compile(r"spark://[^,/\s:]+:\d+(,[^,/\s:]+:\d+)*"),
    re.compile(r"yarn"),
    re.compile(r"k8s://\S+"),
)


def missing_analytics_module() -> str | None:
    """The first module of the analytics extra that is not installed, or None. Looks
    the modules up without importing them (pyspark alone takes half a second)."""
    for name in ANALYTICS_MODULES:
        try:
            if importlib.util.find_spec(name) is None:
                return name
        except (ImportError, ValueError):          # a parent package missing, or a broken entry
            return name
    return None


def check_master(master: str | None) -> None:
    """Refuse a master URL Spark would refuse after its JVM started (seconds later,
    with a Java stack trace)."""
    if master is None or any(form.fullmatch(master) for form in _MASTER_FORMS):
        return
    raise AnalyticsError(f"--master {master!r} is not a Spark master URL: use local, local[N], local[*], "
                         "spark://HOST:PORT, yarn or k8s://https://HOST:PORT")


def find_java() -> str:
    """The java that Spark's launcher will run: $JAVA_HOME/bin/java, else java on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        java = Path(home) / "bin" / "java"
        if java.is_file() and os.access(java, os.X_OK):
            return str(java)
        raise AnalyticsError(f"Spark needs Java, and JAVA_HOME={home} has no bin/java: point JAVA_HOME at a "
                             "Java 17+ installation, or unset it to use the java on PATH")
    java = shutil.which("java")
    if java is None:
        raise AnalyticsError(f"Spark needs Java and none was found (no JAVA_HOME, no java on PATH): {JAVA_HINT}")
    return java


def standalone_addresses(master: str) -> list[tuple[str, int]]:
    """The (host, port) pairs of a spark://h1:p1,h2:p2 URL; [] for any other master."""
    if not master.startswith("spark://"):
        return []
    out = []
    for part in master.removeprefix("spark://").split(","):
        host, _, port = part.rpartition(":")
        out.append((host, int(port)))
    return out


def probe_master(master: str | None, timeout: float = 3.0) -> None:
    """For a standalone master, check that something accepts a TCP connection on one of
    its addresses within ``timeout`` seconds. Spark would otherwise retry registering
    for a minute and end in a stopped context."""
    addresses = standalone_addresses(master or "")
    if addresses:
        _probe(addresses, f"the Spark master {master}", timeout)


# Spark Connect's URL: sc://HOST[:PORT][/;param=value;...], 15002 when no port is given.
_REMOTE = re.compile(r"sc://([^/:;\s]+)(?::(\d+))?(/.*)?")
DEFAULT_CONNECT_PORT = 15002


def check_remote(remote: str) -> tuple[str, int]:
    """Refuse what is not a Spark Connect URL; (host, port) of one that is."""
    m = _REMOTE.fullmatch(remote)
    if m is None:
        raise AnalyticsError(f"--remote {remote!r} is not a Spark Connect URL: use sc://HOST:PORT (the Connect "
                             f"server's port, {DEFAULT_CONNECT_PORT} unless it was started with another)")
    return m.group(1), int(m.group(2) or DEFAULT_CONNECT_PORT)


def probe_remote(remote: str, timeout: float = 3.0) -> None:
    """Something accepts a TCP connection on the Connect server's port."""
    _probe([check_remote(remote)], f"the Spark Connect server {remote}", timeout)


def _probe(addresses: list[tuple[str, int]], what: str, timeout: float) -> None:
    reasons = []
    for host, port in addresses:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return
        except socket.timeout:
            reasons.append(f"{host}:{port}: no answer within {timeout:g} s")
        except OSError as exc:
            reasons.append(f"{host}:{port}: {exc.strerror or exc}")
    raise AnalyticsError(f"cannot reach {what} ({'; '.join(reasons)}); is it running?")


def check_out_dir(path: str) -> None:
    """Refuse an output path that cannot become a report directory: a file, or a place
    where a directory cannot be created. Creates nothing (a failed run leaves no empty
    directory behind)."""
    out = Path(path)
    if out.exists():
        if not out.is_dir():
            raise AnalyticsError(f"--out {path!r} is a file; give a directory for the report")
        if not os.access(out, os.W_OK | os.X_OK):
            raise AnalyticsError(f"--out {path!r} is not writable")
        return
    parent = out.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise AnalyticsError(f"--out {path!r} cannot be created: {str(parent)!r} is a file")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise AnalyticsError(f"--out {path!r} cannot be created: {str(parent)!r} is not writable")
