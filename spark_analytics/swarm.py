"""Spark as the engine of ``simulate --seeds`` (issue 50): it distributes a per-seed
function over partitions of the seeds and collects the rows into a Parquet table.

Nothing here knows what a seed runs: the function (the SDK's ``SeedRunner``, a plain
picklable object) comes from the caller with the row's column kinds, so this module
imports nothing of the SDK (tests/architecture: the analytics sit above the store only).

How it runs. The seeds are cut into contiguous partitions; each partition is a Spark
job of one task (an RDD of one element on classic Spark, ``spark.range`` of one id
and ``mapInArrow`` on Spark Connect), and as many jobs run at once as Spark has cores. A job's rows are
written at once as ``<out>/seeds.parquet/part-<index>.parquet``, so Ctrl-C (which
cancels the running jobs) keeps every finished partition's rows, and progress is known
per partition. A task whose Python worker dies is retried by Spark and loses only its
partition's seeds: the default master is ``local[*,4]`` (local[*] with up to 4 attempts
per task; Spark's plain local mode tries a task once), a standalone cluster retries by
``spark.task.maxFailures`` (4).
"""
from __future__ import annotations

import concurrent.futures as futures
import json
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .errors import AnalyticsError, spark_failure_line

__all__ = ["run_swarm", "SwarmRun", "SWARM_MASTER", "TABLE_DIR", "KILL_ONCE_ENV", "split_seeds", "read_table"]

SWARM_MASTER = "local[*,4]"
TABLE_DIR = "seeds.parquet"
SEEDS_PER_PARTITION_MAX = 50       # a partition's seeds are lost to a dying worker, and shown as progress at once
# A test's hook: the first task of a run that can create this file kills its Python
# worker (SIGKILL) before running any seed, so Spark's retry of it is seen.
KILL_ONCE_ENV = "ROCKETMQ_EMULATOR_SWARM_KILL_ONCE"


@dataclass
class SwarmRun:
    rows: list[dict] = field(default_factory=list)   # sorted by seed
    interrupted: bool = False
    partitions: int = 0
    table: str = ""


def split_seeds(seeds: list[int], partitions: int | None, parallelism: int) -> list[list[int]]:
    """Contiguous partitions: ``partitions`` of them, or enough to give every core a few
    and no partition more than SEEDS_PER_PARTITION_MAX seeds."""
    if partitions is None:
        per = max(1, min(SEEDS_PER_PARTITION_MAX, -(-len(seeds) // (parallelism * 4))))
        partitions = -(-len(seeds) // per)
    partitions = max(1, min(partitions, len(seeds)))
    size, extra = divmod(len(seeds), partitions)
    out, at = [], 0
    for i in range(partitions):
        n = size + (i < extra)
        out.append(seeds[at:at + n])
        at += n
    return out


class _PartitionTask:
    """What one Spark task runs: the partition's seeds, one row (JSON text) each. Called
    on an RDD partition (classic Spark: the lighter path, a job costs a third of a SQL
    one) or, through ``arrow``, by mapInArrow (Spark Connect has DataFrames only)."""

    def __init__(self, run_seed: Callable[[int], dict], seeds: list[int], kill_marker: str | None) -> None:
        self.run_seed, self.seeds, self.kill_marker = run_seed, seeds, kill_marker

    def __call__(self, items):
        for _ in items:                 # the partition's one element: nothing to read
            pass
        if self.kill_marker:
            try:
                os.close(os.open(self.kill_marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                pass
            else:
                os.kill(os.getpid(), signal.SIGKILL)     # the worker dies as a killed one does
        for seed in self.seeds:
            yield json.dumps(self.run_seed(seed))

    def arrow(self, batches):
        import pyarrow as pa

        yield pa.RecordBatch.from_pydict({"row": list(self(batches))}, schema=pa.schema([("row", pa.string())]))


def _arrow_schema(columns: dict[str, str]):
    import pyarrow as pa

    kinds = {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(), "str": pa.string(),
             "json": pa.string(), "strs": pa.list_(pa.string())}
    return pa.schema([(name, kinds[kind]) for name, kind in columns.items()])


def _write_part(path: Path, rows: list[dict], columns: dict[str, str]) -> None:
    """One partition's rows, written whole or not at all (a hidden name, then renamed:
    Spark and pyarrow skip names starting with '.')."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def cell(kind, value):
        return json.dumps(value, sort_keys=True) if kind == "json" and value is not None else value

    table = pa.Table.from_pylist([{k: cell(kind, row.get(k)) for k, kind in columns.items()} for row in rows],
                                 schema=_arrow_schema(columns))
    tmp = path.with_name("." + path.name)
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def read_table(table_dir: str | Path, columns: dict[str, str]) -> list[dict]:
    """The rows of a swarm's table, sorted by seed, nested values parsed."""
    import pyarrow.parquet as pq

    parts = sorted(Path(table_dir).glob("part-*.parquet"))
    rows = [r for p in parts for r in pq.read_table(p).to_pylist()]
    for row in rows:
        for k, kind in columns.items():
            if kind == "json" and row.get(k) is not None:
                row[k] = json.loads(row[k])
    return sorted(rows, key=lambda r: r["seed"])


def _parallelism(spark) -> int:
    try:
        return max(1, spark.sparkContext.defaultParallelism)
    except Exception:                   # Spark Connect: no SparkContext here
        try:
            return max(1, int(spark.conf.get("spark.default.parallelism", "2")))
        except Exception:
            return 2


def _cancel(spark) -> None:
    try:
        spark.sparkContext.cancelAllJobs()
    except Exception:                   # Spark Connect
        try:
            spark.interruptAll()
        except Exception:
            pass


def run_swarm(run_seed: Callable[[int], dict], seeds: list[int], out: str | Path, columns: dict[str, str], *,
              spark=None, master: str | None = None, remote: str | None = None, partitions: int | None = None,
              progress: Callable[[list[dict]], None] | None = None) -> SwarmRun:
    """Run ``run_seed`` for every seed as Spark tasks; rows into ``<out>/seeds.parquet``.
    ``spark``: a session to use (else one is built for ``master``/``remote``).
    ``progress(rows)`` is called on this thread with each finished partition's rows.
    Ctrl-C stops the run: the result says ``interrupted``, with the finished rows."""
    if spark is None:
        from .preflight import check_remote, probe_remote
        from .session import build_remote_session, build_session

        if remote is not None:
            check_remote(remote)
            probe_remote(remote)
        spark = (build_remote_session(remote, register_source=False) if remote is not None else
                 build_session(master or SWARM_MASTER, app_name="rocketmq-emulator-swarm"))
    try:
        return _run(spark, run_seed, seeds, Path(out), columns, partitions, progress)
    except Exception as exc:
        line = spark_failure_line(exc)
        if line is None:                # not Spark's: a defect of ours, with its traceback
            raise
        failed = AnalyticsError(line.replace("running the analysis", "running the swarm"))
        failed.exit_code = 1
        raise failed from None


def _run(spark, run_seed, seeds, out: Path, columns, partitions, progress) -> SwarmRun:
    from .session import is_remote

    remote = is_remote(spark)
    parallelism = _parallelism(spark)
    chunks = split_seeds(list(seeds), partitions, parallelism)
    table = Path(out) / TABLE_DIR
    table.mkdir(parents=True, exist_ok=True)
    kill_marker = os.environ.get(KILL_ONCE_ENV) or None
    stop = threading.Event()

    def run_partition(index: int) -> list[dict]:
        if stop.is_set():
            return []
        task = _PartitionTask(run_seed, chunks[index], kill_marker)
        if remote:
            got = [r["row"] for r in spark.range(index, index + 1, 1, 1).mapInArrow(task.arrow, "row string").collect()]
        else:
            got = spark.sparkContext.parallelize([index], 1).mapPartitions(task).collect()
        rows = [json.loads(text) for text in got]
        _write_part(table / f"part-{index:05d}.parquet", rows, columns)
        return rows

    result = SwarmRun(partitions=len(chunks), table=str(table))
    pool = futures.ThreadPoolExecutor(max_workers=parallelism, thread_name_prefix="swarm-partition")
    jobs = {pool.submit(run_partition, i): i for i in range(len(chunks))}
    finished: dict[int, list[dict]] = {}        # by partition: kept whole wherever Ctrl-C lands
    pending = set(jobs)
    try:
        while pending:
            done, pending = futures.wait(pending, timeout=0.5, return_when=futures.FIRST_COMPLETED)
            for f in done:
                finished[jobs[f]] = f.result()
                if progress is not None and finished[jobs[f]]:
                    progress(finished[jobs[f]])
    except KeyboardInterrupt:
        result.interrupted = True
    except BaseException:
        stop.set()
        _cancel(spark)
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    if result.interrupted:
        stop.set()
        for f in jobs:
            f.cancel()
        _cancel(spark)
        deadline = time.monotonic() + 30
        for f, index in jobs.items():   # running jobs end cancelled; every one that finished (its part written) counts
            if index not in finished:
                try:
                    finished[index] = f.result(timeout=max(0.0, deadline - time.monotonic()))
                except BaseException:
                    pass
    pool.shutdown(wait=not result.interrupted, cancel_futures=True)
    result.rows = sorted((r for rows in finished.values() for r in rows), key=lambda r: r["seed"])
    return result
