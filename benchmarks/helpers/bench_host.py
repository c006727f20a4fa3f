"""What the benchmarks share: how fast the host is right now (a fixed pure-Python loop,
printed beside figures that are compared), a process's CPU seconds, and the other side of an A/B comparison (a
commit of this repository in a temporary worktree, or another checkout)."""
from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["host_speed", "loop_speed", "cpu_seconds", "other_tree", "add_other_side", "interleaved", "json_child", "tree_env",
           "revision"]

HERE = Path(__file__).resolve().parent.parent           # benchmarks/
REPO = HERE.parent


def loop_speed() -> float:
    """Millions of steps of a fixed pure-Python loop per CPU second, right now."""
    t0 = time.process_time()
    x = 0
    for i in range(3_000_000):
        x += i & 7
    return 3 / (time.process_time() - t0)


def host_speed() -> str:
    """``loop_speed`` as the benchmarks print it."""
    return f"{loop_speed():.1f} M loop steps/CPU-s"


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all threads), from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def add_other_side(ap, rev_help: str = "a commit of this repository for the other side (a temporary worktree)",
                   tree_help: str = "an existing checkout for the other side") -> None:
    """``--rev REV`` or ``--tree DIR`` (one of them, required): what ``other_tree`` takes."""
    side = ap.add_mutually_exclusive_group(required=True)
    side.add_argument("--rev", help=rev_help)
    side.add_argument("--tree", help=tree_help)


def interleaved(rounds: int, measure) -> dict[str, list]:
    """``measure(side)`` for "this" and "other", A B B A in each round: each side measured
    twice a round, next to the other (the host's speed swings within minutes)."""
    results: dict[str, list] = {"this": [], "other": []}
    for _ in range(rounds):
        for side in ("this", "other", "other", "this"):
            results[side].append(measure(side))
    return results


@contextlib.contextmanager
def other_tree(rev: str | None, tree: str | None):
    """The other side's checkout: commit ``rev`` in a temporary worktree (removed after),
    or the checkout at ``tree``. Raises SystemExit with one line when neither works."""
    if rev:
        with tempfile.TemporaryDirectory(prefix="bench-other-") as tmp:
            path = Path(tmp) / "other"
            r = subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(path), rev],
                               capture_output=True, text=True)
            if r.returncode:
                raise SystemExit(f"--rev {rev}: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else 'git failed'}")
            try:
                yield path
            finally:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(path)],
                               capture_output=True)
        return
    path = Path(tree).resolve()
    if not (path / "store" / "__init__.py").is_file():
        raise SystemExit(f"--tree {tree}: not a checkout of this project")
    yield path


def json_child(code: str, args: list[str], env: dict | None) -> dict:
    """Run ``code`` in a fresh interpreter with ``args``; its last line of output, as JSON.
    A failed child ends the benchmark with the tail of what it said."""
    proc = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"a child failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}{proc.stdout[-1000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def tree_env(tree: Path) -> dict:
    """The environment in which a child process imports the project from ``tree``
    (benchmarks/tree_shim)."""
    return {**os.environ, "TREE": str(tree),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE / "tree_shim"), os.environ.get("PYTHONPATH")]))}


def revision(tree: Path) -> str:
    """The short commit of ``tree``, marked when it has uncommitted changes."""
    r = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(tree), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return (r.stdout.strip() or "?") + (" + uncommitted changes" if dirty else "")
