"""Rows/s of the rocketmq-commitlog data source beside Spark reading the same records
from Parquet (written with pyarrow), in one run, one SparkSession.

    .venv/bin/python benchmarks/spark_datasource_bench.py [--records 5000000] [--master local[*]]

The records are built in bulk: a few encoded template records (store.records.
encode_record) are repeated with numpy and their queue id, queue offset, physical
offset, timestamps and UNIQ_KEY patched per record, then cut into segment files like
the store's (each non-last segment ends with a BLANK header). The Parquet copy is the
data source's own decoding of those files (so both hold identical rows). Everything
lives in a temporary directory that is removed at the end.

The analyses read a large snapshot through its columnar form (spark_analytics/
parquet_form.py: Parquet written once from the log by the data source's tasks); so the
store is snapshotted (take_snapshot, timed apart) and the form written once (timed).

Queries, each run once to warm up and then timed (best of --repeat), on three inputs:
Parquet written by pyarrow (the yardstick), the data source reading the log, and the
log as the analyses read it (``read_commitlog``: the columnar form):
  full scan   every column materialised (Spark's "noop" sink)
  aggregate   groupBy(topic): count, sum(body_size), max(store_timestamp)
  aggregate, three columns   the same, only the three columns asked for (the data
              source told them by a schema; Parquet prunes by itself)
The three ratios (as the analyses read / Parquet) are the target's; the data source's
own are printed beside them, and the first analysis' rate with the write counted in.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rocketmq_emulator.store.records import MessageRecord, blank_record, encode_record  # noqa: E402

SEGMENT_SIZE = 128 << 20          # smaller than the store's 1 GiB default: more tasks on 2 cores
TOPICS = ["orders-eu", "orders-us", "orders-ap", "payments"]
TAGS = ["TagA", "TagB", "TagC", "TagD"]
T0 = 1_704_067_200_000


def _template(k: int) -> bytes:
    rec = MessageRecord(
        topic=TOPICS[k].ljust(9, "-"), body=bytes(range(k, k + 48)), queue_id=0,
        properties={"KEYS": "order-00000000", "UNIQ_KEY": "0" * 32, "TAGS": TAGS[k],
                    "CLUSTER": "DefaultCluster"},
        store_host=("127.0.0.1", 10911), born_host=("127.0.0.1", 50000 + k))
    return encode_record(rec)


def _hex(values: np.ndarray, width: int) -> np.ndarray:
    """(n, width) ASCII uppercase hex digits of non-negative ints."""
    digits = np.frombuffer(b"0123456789ABCDEF", np.uint8)
    shifts = np.arange(width - 1, -1, -1, dtype=np.uint64) * np.uint64(4)
    return digits[(values.astype(np.uint64)[:, None] >> shifts) & np.uint64(15)]


def _dec(values: np.ndarray, width: int) -> np.ndarray:
    digits = np.frombuffer(b"0123456789", np.uint8)
    pows = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
    return digits[(values[:, None] // pows) % 10]


def generate(root: Path, n: int) -> int:
    """Write ``n`` records as commit-log segments under root/commitlog; returns bytes."""
    tmpl = [_template(k) for k in range(4)]
    size = len(tmpl[0])
    assert all(len(t) == size for t in tmpl)
    uniq_at = tmpl[0].index(b"0" * 32)
    keys_at = tmpl[0].index(b"order-") + 6
    per_seg = (SEGMENT_SIZE - 8) // size
    (root / "commitlog").mkdir(parents=True)
    total = 0
    for seg_no, first in enumerate(range(0, n, per_seg)):
        m = min(per_seg, n - first)
        base = seg_no * SEGMENT_SIZE
        i = np.arange(first, first + m, dtype=np.int64)
        grid = np.empty((m, size), np.uint8)
        kinds = i % 4
        for k in range(4):
            grid[kinds == k] = np.frombuffer(tmpl[k], np.uint8)

        def put(col: int, vals: np.ndarray, w: int) -> None:
            grid[:, col:col + w] = vals.astype(f">i{w}").view(np.uint8).reshape(m, w)

        qid = (i // 4) % 8
        put(12, qid, 4)
        put(20, i // 32, 8)                                   # queue offset within (topic, qid)
        put(28, base + np.arange(m, dtype=np.int64) * size, 8)
        put(40, T0 + i * 2, 8)                                # born
        put(56, T0 + i * 2 + 1, 8)                            # stored 1 ms later
        grid[:, uniq_at:uniq_at + 32] = _hex(i + (1 << 60), 32)
        grid[:, keys_at:keys_at + 8] = _dec(i, 8)
        with open(root / "commitlog" / f"{base:020d}", "wb") as f:
            f.write(grid.tobytes())
            if first + m < n:
                f.write(blank_record(SEGMENT_SIZE - m * size))
        total += m * size
    return total


def write_parquet(src: Path, dst: Path) -> None:
    """The same rows, decoded by the data source's own decoder, one file per segment."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rocketmq_emulator.spark_analytics.columnar import iter_batches
    from rocketmq_emulator.spark_analytics.commitlog import list_segments, open_segment, scan_buffer

    dst.mkdir(parents=True)
    for seg in list_segments(src / "commitlog"):
        b, mv = open_segment(seg.path)
        scan = scan_buffer(b, mv, seg.base)
        table = pa.Table.from_batches(list(iter_batches(b, mv, seg.base, scan.starts, scan.totals)))
        pq.write_table(table, dst / f"{seg.base:020d}.parquet")


def timed(label: str, fn, rows: int, repeat: int) -> float:
    fn()                                                      # warm-up: worker spawn, caches
    best = min(_clock(fn) for _ in range(repeat))
    print(f"  {label:<44s} {best:6.2f} s  {rows / best / 1e6:6.2f} M rows/s", flush=True)
    return rows / best


def _clock(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=5_000_000)
    ap.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args(argv)

    from pyspark.sql import functions as F

    from rocketmq_emulator.spark_analytics.datasource import read_commitlog, spark_schema
    from rocketmq_emulator.spark_analytics.parquet_form import columnar_form
    from rocketmq_emulator.spark_analytics.session import build_session
    from rocketmq_emulator.store.snapshot import take_snapshot

    tmp = Path(tempfile.mkdtemp(prefix="rmq-ds-bench-"))
    try:
        t = time.perf_counter()
        nbytes = generate(tmp / "store", args.records)
        print(f"generated {args.records:,} records, {nbytes / 2**20:,.0f} MiB in "
              f"{len(os.listdir(tmp / 'store' / 'commitlog'))} segments: {time.perf_counter() - t:.1f} s", flush=True)
        t = time.perf_counter()
        write_parquet(tmp / "store", tmp / "parquet")
        print(f"wrote the same rows as Parquet with pyarrow: {time.perf_counter() - t:.1f} s", flush=True)

        spark = build_session(args.master, driver_memory="3g")
        print(f"Spark {spark.version}, master {spark.sparkContext.master}, "
              f"{spark.sparkContext.defaultParallelism} cores, load average {os.getloadavg()[0]:.1f} "
              "(other work on these cores skews both rates, the data source's more)", flush=True)
        n = args.records
        ds = spark.read.format("rocketmq-commitlog").load(str(tmp / "store"))
        pq_df = spark.read.parquet(str(tmp / "parquet"))
        t = time.perf_counter()
        take_snapshot(tmp / "store", tmp / "snap", wall_ms=lambda: int(time.time() * 1000))
        print(f"snapshot of the store: {time.perf_counter() - t:.1f} s", flush=True)
        t = time.perf_counter()
        form = columnar_form(spark, str(tmp / "snap"))
        write_s = time.perf_counter() - t
        print(f"columnar form written once (decode by the data source + Parquet write): {write_s:.1f} s, "
              f"{args.records / write_s / 1e6:.2f} M rows/s", flush=True)
        names = [f.name for f in spark_schema(False).fields]
        col_df = read_commitlog(spark, str(tmp / "snap"), names)
        assert form is not None and ds.count() == n == pq_df.count() == col_df.count(), "row counts differ"

        def full(df):
            return lambda: df.write.format("noop").mode("overwrite").save()

        def agg(df):
            return lambda: df.groupBy("topic").agg(F.count("*"), F.sum("body_size"),
                                                   F.max("store_timestamp")).collect()

        three = "topic string, body_size int, store_timestamp long"
        pruned = spark.read.format("rocketmq-commitlog").schema(three).load(str(tmp / "store"))
        col_three = read_commitlog(spark, str(tmp / "snap"), ["topic", "body_size", "store_timestamp"])
        r = {}
        for label, key, q in (("full scan, every column", "full", full), ("aggregate by topic", "agg", agg)):
            print(f"{label}:", flush=True)
            r[key + "_pq"] = timed("Parquet (pyarrow-written)", q(pq_df), n, args.repeat)
            r[key + "_ds"] = timed("rocketmq-commitlog data source", q(ds), n, args.repeat)
            r[key + "_col"] = timed("as the analyses read it (columnar form)", q(col_df), n, args.repeat)
        print("aggregate by topic, three columns:", flush=True)
        r["three_pq"] = timed("Parquet (pyarrow-written)", agg(pq_df.select("topic", "body_size", "store_timestamp")),
                              n, args.repeat)
        r["three_ds"] = timed("rocketmq-commitlog, 3-column schema", agg(pruned), n, args.repeat)
        r["three_col"] = timed("as the analyses read it (columnar form)", agg(col_three), n, args.repeat)
        print("ratio to Parquet          full scan  aggregate  3-column aggregate   (target >= 50%)")
        for label, k in (("as the analyses read it", "col"), ("data source alone", "ds")):
            print(f"  {label:<24s} {r['full_' + k] / r['full_pq']:8.0%}  {r['agg_' + k] / r['agg_pq']:9.0%}  "
                  f"{r['three_' + k] / r['three_pq']:18.0%}")
        first = n / (write_s + n / r["agg_col"])
        print(f"the first analysis of a snapshot pays the write: aggregate with it {first / 1e6:.2f} M rows/s "
              f"({first / r['agg_pq']:.0%} of Parquet); every later one {r['agg_col'] / 1e6:.2f} M rows/s", flush=True)
        spark.stop()
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
