"""Store benchmarks, side by side with the raw file system, in one run (~1 minute):

1. Durable append: realistic records (1 KiB bodies with UNIQ_KEY, TAGS and KEYS)
   through MessageStore.put, against writing the very same bytes sequentially to a
   file with the same flush policy. ASYNC_FLUSH: all puts, then one flush (fsync) /
   all writes, then one fsync. SYNC_FLUSH: an fsync per record on both sides.
   The ratio is raw time / store time (store throughput as a share of the raw one;
   target >= 50 %). The store's time includes encoding each record (encode_record),
   which the raw side does not pay: it writes bytes encoded beforehand. Inputs are
   built before the clock starts and frozen out of the garbage collector on both sides.
2. Reopen: open a closed store of 1,000,000 small messages (target < 3 s); and, for
   scale, the same after deleting the checkpoint (every record walked and checked).

    python benchmarks/store_bench.py [--n 100000] [--sync-n 1000] [--reopen-n 1000000]

Uses a temporary directory (removed afterwards).
"""
from __future__ import annotations

import argparse
import gc
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rocketmq_emulator.store import MessageStore, StoreConfig  # noqa: E402
from rocketmq_emulator.store.records import MessageRecord, properties_to_string  # noqa: E402


def realistic(i: int, body: bytes) -> MessageRecord:
    props = {"UNIQ_KEY": f"0A0000017A3B18B4AAC2{i:012X}", "TAGS": f"Tag{i % 4}",
             "KEYS": f"order-{i} customer-{i % 1000}", "WAIT": "true"}
    r = MessageRecord(topic="OrderTopic", body=body, queue_id=i % 4, properties=props,
                      born_timestamp=1_700_000_000_000 + i, born_host=("10.0.0.7", 51234),
                      store_host=("10.0.0.1", 10911))
    r.properties_text = properties_to_string(props)     # as the broker hands records over
    return r


def store_append(root: Path, records, flush_type: str) -> tuple[float, list[bytes]]:
    s = MessageStore(root, StoreConfig(flush_disk_type=flush_type))
    put = s.put
    offsets = []
    keep = offsets.append
    quiet_gc()
    t0 = time.perf_counter()
    for i, r in enumerate(records):
        res = put(r, 1_700_000_000_000 + i)
        keep(res.commit_log_offset if res.ok else -1)
    s.flush()                                   # ASYNC: the one fsync; SYNC: already durable
    elapsed = time.perf_counter() - t0
    gc.unfreeze()
    assert -1 not in offsets
    raws = [s.read(off) for off in offsets]
    s.close()
    return elapsed, raws


def quiet_gc() -> None:
    """Move the inputs built beforehand out of the collector's way (gc.freeze), so the
    timed loop pays for its own garbage only, not for rescanning the benchmark's lists."""
    gc.collect()
    gc.freeze()


def raw_append(path: Path, raws: list[bytes], sync_each: bool) -> float:
    quiet_gc()
    t0 = time.perf_counter()
    with open(path, "wb") as f:
        fd = f.fileno()
        for raw in raws:
            f.write(raw)
            if sync_each:
                f.flush()
                os.fsync(fd)
        f.flush()
        os.fsync(fd)
    elapsed = time.perf_counter() - t0
    gc.unfreeze()
    return elapsed


def bench_append(tmp: Path, n: int, flush_type: str, rounds: int) -> None:
    body = bytes(range(256)) * 4                # 1 KiB
    best_store = best_raw = float("inf")
    raws: list[bytes] = []
    for k in range(rounds):
        records = [realistic(i, body) for i in range(n)]
        d = tmp / f"append-{flush_type}-{k}"
        t_store, raws = store_append(d, records, flush_type)
        shutil.rmtree(d)
        t_raw = raw_append(tmp / f"raw-{k}", raws, flush_type == "SYNC_FLUSH")
        os.unlink(tmp / f"raw-{k}")
        best_store, best_raw = min(best_store, t_store), min(best_raw, t_raw)
    size = sum(map(len, raws))
    mb = size / 1e6
    print(f"{flush_type}: {n} records of {size // n} bytes (1 KiB body + UNIQ_KEY/TAGS/KEYS), best of {rounds}")
    print(f"  store put + flush : {best_store:7.3f} s  {n / best_store:10,.0f} msg/s  {mb / best_store:7.1f} MB/s")
    print(f"  raw write + fsync : {best_raw:7.3f} s  {n / best_raw:10,.0f} msg/s  {mb / best_raw:7.1f} MB/s")
    print(f"  per record: store {1e6 * best_store / n:.2f} us, raw {1e6 * best_raw / n:.2f} us; "
          f"ratio (raw time / store time): {100 * best_raw / best_store:.0f} %  (target >= 50 %)")


def bench_reopen(tmp: Path, n: int) -> None:
    root = tmp / "reopen"
    s = MessageStore(root)
    t0 = time.perf_counter()
    put = s.put
    for i in range(n):
        r = MessageRecord(topic="SmallTopic", body=b"small-%08d" % i, queue_id=i % 4,
                          properties={"UNIQ_KEY": f"0A0000017A3B18B4AAC2{i:012X}", "TAGS": "TagA"})
        put(r, 1_700_000_000_000 + i)
    s.close()
    build = time.perf_counter() - t0
    log_mb = sum(p.stat().st_size for p in (root / "commitlog").iterdir()) / 1e6
    print(f"reopen: a store of {n:,} small messages ({log_mb:.0f} MB log, 4 queues; built in {build:.1f} s)")

    t0 = time.perf_counter()
    s = MessageStore(root)
    t_open = time.perf_counter() - t0
    assert s.recovery.clean and sum(s.max_offset("SmallTopic", q) for q in range(4)) == n
    s.close()
    print(f"  reopen after a clean close : {t_open:7.3f} s  (target < 3 s; "
          f"records walked: {s.recovery.records_walked})")

    (root / "checkpoint").unlink()
    t0 = time.perf_counter()
    s = MessageStore(root)
    t_walk = time.perf_counter() - t0
    walked = s.recovery.records_walked
    s.close()
    print(f"  reopen without checkpoint  : {t_walk:7.3f} s  (every record checked, then dispatched: "
          f"{walked:,} record visits)")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=100_000, help="records for the ASYNC_FLUSH append run")
    p.add_argument("--sync-n", type=int, default=1_000, help="records for the SYNC_FLUSH append run")
    p.add_argument("--reopen-n", type=int, default=1_000_000, help="messages in the reopen store")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="store-bench-"))
    try:
        t0 = time.perf_counter()
        bench_append(tmp, args.n, "ASYNC_FLUSH", args.rounds)
        bench_append(tmp, args.sync_n, "SYNC_FLUSH", 2)
        bench_reopen(tmp, args.reopen_n)
        print(f"total {time.perf_counter() - t0:.0f} s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
