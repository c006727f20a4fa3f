"""What ``analyze`` checks before Spark starts (seconds of JVM), in one place: the
command checks it in its own process, the warm server's supervisor for the analyses it
runs (``server_analysis``)."""
from __future__ import annotations

from .errors import AnalyticsError

__all__ = ["check_inputs"]


def check_inputs(snapshot: str, out: str, *, master: str | None = None, remote: str | None = None,
                 delay_levels: str | None = None) -> None:
    """Raises ValueError (a bad option: exit 2), AnalyticsError or SnapshotError, each
    one line."""
    from .datasource import check_complete
    from .jobs import parse_delay_levels
    from .preflight import check_master, check_out_dir, check_remote, find_java, probe_master, probe_remote
    from rocketmq_emulator.store.store_dir import cluster_members, resolve_store

    if remote is not None and master is not None:
        raise AnalyticsError("give --master or --remote, not both")
    check_master(master)
    if remote is not None:
        check_remote(remote)
    resolve_store(snapshot, "snapshot")
    for _, where in cluster_members(snapshot):
        check_complete(where)
    check_out_dir(out)
    if delay_levels:
        parse_delay_levels(delay_levels)
    if remote is None:
        find_java()
        probe_master(master)
    else:
        probe_remote(remote)
