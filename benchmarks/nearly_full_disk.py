#!/usr/bin/env python3
"""A Pulsar send on a nearly full disk (issue 46, item 2; its log, item 9).

The server is `serve` (rss_bench.Server: real clock, stderr to a file) with its
--data-dir on an 8 MiB tmpfs, the commit log in 1 MiB segments, logging at INFO.
Per revision: the disk is filled with Pulsar sends (64 KiB, real pulsar-client), its
last blocks taken, and the tmpfs resized to leave --free KiB (20: room for a page, not
for the message); then one 32 KiB message is sent with a --send-timeout s send timeout
and watched for --watch s. Printed: how the send ended and after how long (or that it
had not ended), what /healthz answered, the log lines the server wrote over the watch
(and per second), and its RSS. Needs root (mount); on loopback only.

Usage: python benchmarks/nearly_full_disk.py [--rev 05e806b --rev WORKTREE] [--free 20]
       [--send-timeout 3] [--watch 20]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

from rss_bench import Server, tree_of
from tests.reliability.tmpfs import resize_tmpfs, take_every_block  # (rss_bench puts the repository first)

TOPIC = "persistent://public/default/nearly-full"


def mount_tmpfs(where: Path, size: str) -> None:
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", f"bench-{uuid.uuid4().hex[:8]}", str(where)],
                   check=True, capture_output=True)


def used_kib(where: Path) -> int:
    st = os.statvfs(where)
    return (st.f_blocks - st.f_bfree) * st.f_frsize // 1024


def healthz(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0                                # no answer


def send(producer, body: bytes, wait_s: float) -> tuple[str, float]:
    """(how the send ended, or "still blocked", and the seconds it took)."""
    done, results = threading.Event(), []
    started = time.monotonic()
    producer.send_async(body, lambda result, msg_id: (results.append(result), done.set()))
    if not done.wait(wait_s):
        return "still blocked", time.monotonic() - started
    return str(results[0]).rsplit(".", 1)[-1], time.monotonic() - started


def run(rev: str, args, tmp: Path) -> dict:
    import pulsar

    code = tree_of(rev, tmp / "code")
    workdir = tmp / "work"
    workdir.mkdir()
    disk = workdir / "store"
    mount_tmpfs(disk, "8m")
    conf = workdir / "broker.conf"
    conf.write_text("mapedFileSizeCommitLog=1048576\n")
    server = Server(workdir, ["--no-grpc", "--config", str(conf), "--log-level", "INFO"], code)
    client = None
    try:
        client = pulsar.Client(f"pulsar://127.0.0.1:{server.ports['pulsar']}", operation_timeout_seconds=5,
                               logger=pulsar.FileLogger(pulsar.LoggerLevel.Error, str(workdir / "client.log")))
        late = client.create_producer(TOPIC, send_timeout_millis=int(args.send_timeout * 1000),
                                      batching_enabled=False)
        filler = client.create_producer(TOPIC, send_timeout_millis=2000, batching_enabled=False)
        filled = 0
        while send(filler, bytes(64 * 1024), 30)[0] == "Ok":
            filled += 1
        take_every_block(disk / "ballast")
        resize_tmpfs(disk, f"{used_kib(disk) + args.free}k")
        lines_before = len(server.log().splitlines())
        started = time.monotonic()
        outcome, took = send(late, bytes(32 * 1024), args.watch)
        health = healthz(server.ports["http"])
        rest = args.watch - (time.monotonic() - started)
        if rest > 0:
            time.sleep(rest)                    # the rest of the watch: what the state logs meanwhile
        lines = len(server.log().splitlines()) - lines_before
        return {"filled": filled, "send": outcome, "after_s": took, "healthz": health, "log_lines": lines,
                "rss": server.rss()}
    finally:
        if client is not None:
            client.close()
        server.stop()
        subprocess.run(["umount", "-l", str(disk)], check=False)


def main() -> int:
    p = argparse.ArgumentParser(description="A Pulsar send on a nearly full disk.")
    p.add_argument("--rev", action="append", help="git revision the server runs (repeatable; default WORKTREE)")
    p.add_argument("--free", type=int, default=20, help="KiB left free after the fill (default 20)")
    p.add_argument("--send-timeout", type=float, default=3.0, help="the client's send timeout, s (default 3)")
    p.add_argument("--watch", type=float, default=20.0, help="seconds the send and the log are watched (default 20)")
    args = p.parse_args()
    if os.geteuid() != 0:
        print("needs root: it mounts a tmpfs", file=sys.stderr)
        return 2
    print(f"{'server':10} {'filled':>6}  {'32 KiB send':24} {'/healthz':>8}  {'log lines':>16}  {'RSS':>7}")
    for rev in args.rev or ["WORKTREE"]:
        with tempfile.TemporaryDirectory(prefix="nearly-full-") as tmp:
            r = run(rev, args, Path(tmp))
        ended = f"{r['send']} after {r['after_s']:.1f} s"
        print(f"{rev:10} {r['filled']:6}  {ended:24} {r['healthz']:8}  "
              f"{r['log_lines']:5} ({r['log_lines'] / args.watch:4.1f}/s)  {r['rss']:5.0f} MiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
