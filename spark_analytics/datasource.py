"""The ``rocketmq-commitlog`` PySpark data source: commit-log segments → typed DataFrame.

    spark.read.format("rocketmq-commitlog").load(SNAP_OR_STORE_DIR)
    spark.read.format("rocketmq-commitlog").option("includeBody", "true").load(DIR)
    spark.read.format("rocketmq-commitlog").schema("topic string, body_size int").load(DIR)

One partition per segment file; each task maps its segment, walks it and yields
Arrow batches (``columnar.read_segment``) — Arrow because per-row tuples are about 3x
slower through the Python worker (tech-check §1). A snapshot's manifest bounds the
read to its consistent cut. Without a manifest (a store directory, perhaps live) the
planner walks the last segment to find the last complete record, as the snapshot does.
Damage stops the read of its segment at the last good record; it is reported where
Spark plans the read (a warning and a log line, manifest or last segment; in PySpark
that runs in a Python worker whose stderr is the console's — ``plan_segments`` gives
the same answer to any caller) and on the executor's stderr (any segment). A
user-given schema may name any subset of the columns, which is then all that is
decoded (Spark does not push column pruning into Python data sources).

Options: ``includeBody`` (false), ``batchRows`` (65536), ``onDamage`` = stop | fail.

``read_commitlog`` is what the analyses call: for a small log (``LOCAL_READ_MAX_BYTES``)
the same decoding done in the driver and handed to Spark as one Arrow table (the rows
are the same; no Python worker starts, which on a 2-core host is most of the time a
test run's store takes to read); for a large snapshot its columnar form
(``parquet_form``: Parquet written by this data source once, then read at Parquet's
speed); for a large store directory this data source.
"""
from __future__ import annotations

import logging
import sys
import warnings

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader
from pyspark.sql.types import (BinaryType, DataType, IntegerType, LongType, MapType, StringType,
                               StructField, StructType)

from .columnar import COLUMNS, read_segment, select_schema
from .commitlog import Damage, list_segments, open_segment, scan_buffer
from .errors import AnalyticsError
from .parquet_form import columnar_form
from .segments import SegmentPart, check_complete, plan_segments
from .sql_conf import session_conf
from rocketmq_emulator.store.store_dir import resolve_store

__all__ = ["CommitLogDataSource", "FORMAT", "LOCAL_READ_MAX_BYTES", "log_bytes", "read_commitlog",
           "read_commitlog_arrow", "spark_schema",
           "plan_segments", "SegmentPart", "check_complete"]

FORMAT = "rocketmq-commitlog"
# Up to this many commit-log bytes are decoded in the driver (read_commitlog). The
# table it builds is smaller than the log (no bodies); past this, one task per segment
# spreads the decoding over the executors.
LOCAL_READ_MAX_BYTES = 64 << 20
log = logging.getLogger("spark_analytics")


def _spark_type(name: str) -> DataType:
    return {"physical_offset": LongType(), "store_timestamp": LongType(), "born_timestamp": LongType(),
            "queue_offset": LongType(), "body": BinaryType(),
            "properties": MapType(StringType(), StringType(), True)}.get(name) or _by_arrow[name]


_by_arrow: dict[str, DataType] = {
    n: (IntegerType() if str(t) == "int32" else StringType()) for n, t in COLUMNS
    if str(t) in ("int32", "string")
}


def spark_schema(include_body: bool = False) -> StructType:
    """The full DataFrame schema; mirrors ``columnar.COLUMNS`` (a test checks that
    Spark's Arrow form of it equals ``columnar.arrow_schema``)."""
    names = [n for n, _ in COLUMNS] + (["body"] if include_body else [])
    return StructType([StructField(n, _spark_type(n), True) for n in names])


def _warn_damage(damage: Damage) -> None:
    msg = f"reading up to the damage: {damage.describe()}"
    log.warning(msg)
    warnings.warn(msg, stacklevel=3)


def log_bytes(path: str) -> int:
    """The commit log's size on disk: its segment files' sizes, which bound the records
    from above without scanning a (perhaps 1 GiB, live) tail."""
    return sum(seg.size for seg in list_segments(resolve_store(path).commitlog))


def read_commitlog_arrow(path: str, columns: list[str], *, local_max_bytes: int | None = None,
                         damage_reported: bool = False) -> pa.Table | None:
    """The commit log of a snapshot or store directory decoded here, in this process, as
    an Arrow table of ``columns`` — or None when it is larger than ``local_max_bytes``
    (default ``LOCAL_READ_MAX_BYTES``): then the executors should decode it. Damage
    stops the read of its segment at the last good record and warns, as the data
    source does; ``damage_reported`` says the caller has already reported what
    ``plan_segments`` finds (a manifest's damage or the live tail's), so only damage met
    inside earlier segments is warned of."""
    limit = LOCAL_READ_MAX_BYTES if local_max_bytes is None else local_max_bytes
    if log_bytes(path) > limit:
        return None
    parts, damage = plan_segments(path)
    if damage is not None and not damage_reported:
        _warn_damage(damage)
    batches = []
    for part in parts:
        b, mv = open_segment(part.path, part.limit)
        result, decoded = read_segment(b, mv, part.base, False, columns)
        batches.extend(decoded)
        later = result.scan.damage
        if later is not None and later != damage:
            _warn_damage(later)
    return pa.Table.from_batches(batches, schema=select_schema(False, columns))


def read_commitlog(spark, path: str, columns: list[str], *, local_max_bytes: int | None = None,
                   damage_reported: bool = False, columnar: bool = True, progress=lambda msg: None):
    """The commit log of a snapshot or store directory as a DataFrame of ``columns``
    (names from ``spark_schema``; no body). Up to ``local_max_bytes`` (default
    ``LOCAL_READ_MAX_BYTES``) it is decoded here (``read_commitlog_arrow``); a larger one
    is read from the snapshot's columnar form (``parquet_form``, written by the data
    source's tasks the first time; ``columnar=False``: from the data source every
    time). For a moment the call sets the session's
    ``spark.sql.execution.arrow.localRelationThreshold``; it is put back after."""
    full = spark_schema(False)
    schema = StructType([full[name] for name in columns])
    table = read_commitlog_arrow(path, columns, local_max_bytes=local_max_bytes, damage_reported=damage_reported)
    if table is None:
        form = columnar_form(spark, path, progress) if columnar else None
        if form is not None:
            return spark.read.parquet(form).select(*columns)
        return spark.read.format(FORMAT).schema(schema).load(path)
    # Below this threshold Spark would make the table a LocalRelation, whose rows the
    # planner compares every time a later query looks for a cached frame built on it
    # (measured: 120k records made building cached analyses' plans 25 s slower). At 0
    # the batches become an RDD (a partition per batch of
    # spark.sql.execution.arrow.maxRecordsPerBatch rows), compared by id. An empty
    # table stays a LocalRelation, which costs nothing.
    with session_conf(spark, {"spark.sql.execution.arrow.localRelationThreshold": "0"}):
        return spark.createDataFrame(table, schema=schema)


def _flag(options, name: str, default: bool) -> bool:
    v = options.get(name)
    if v is None:
        return default
    if str(v).lower() in ("true", "1", "yes"):
        return True
    if str(v).lower() in ("false", "0", "no"):
        return False
    raise AnalyticsError(f"option {name}={v!r}: expected true or false")


class CommitLogDataSource(DataSource):
    """Registered as ``rocketmq-commitlog`` (``spark.dataSource.register`` does it;
    ``session.build_session`` registers it for you)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self):
        return spark_schema(_flag(self.options, "includeBody", False))

    def reader(self, schema: StructType) -> "CommitLogReader":
        return CommitLogReader(self.options, schema)


class CommitLogReader(DataSourceReader):
    def __init__(self, options, schema: StructType) -> None:
        path = options.get("path")
        if not path:
            raise AnalyticsError("rocketmq-commitlog needs a path: .load(SNAPSHOT_OR_STORE_DIR)")
        self.include_body = _flag(options, "includeBody", False)
        self.columns = [f.name for f in schema.fields]
        select_schema(self.include_body, self.columns)        # unknown column → error now
        full = {f.name: f.dataType for f in spark_schema(True).fields}
        for f in schema.fields:
            if full[f.name] != f.dataType:
                raise AnalyticsError(f"column {f.name} is {full[f.name].simpleString()}, "
                                     f"not {f.dataType.simpleString()}")
        self.batch_rows = int(options.get("batchRows", 1 << 16))
        self.on_damage = options.get("onDamage", "stop")
        if self.on_damage not in ("stop", "fail"):
            raise AnalyticsError(f"option onDamage={self.on_damage!r}: expected stop or fail")
        self.parts, damage = plan_segments(path)
        if damage is not None:
            if self.on_damage == "fail":
                raise AnalyticsError(f"commit log damaged: {damage.describe()}")
            _warn_damage(damage)

    def partitions(self):
        # Spark wants at least one partition; an empty one reads nothing.
        return list(self.parts) or [SegmentPart("", 0, 0)]

    def read(self, partition: SegmentPart):
        if not partition.path:
            return
        b, mv = open_segment(partition.path, partition.limit)
        if self.on_damage == "fail":                   # know before yielding anything
            scan = scan_buffer(b, mv, partition.base)
            if scan.damage is not None:
                raise AnalyticsError(f"commit log damaged: {scan.damage.describe()}")
        result, batches = read_segment(b, mv, partition.base, self.include_body, self.columns, self.batch_rows)
        yield from batches
        if result.scan.damage is not None:
            print(f"rocketmq-commitlog: read up to the damage: {result.scan.damage.describe()}", file=sys.stderr)
