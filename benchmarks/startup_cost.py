#!/usr/bin/env python3
"""What starting costs, this checkout beside another commit (issue 49): CPU seconds, each
measurement one fresh child process, the sides taking turns A B B A (the host's speed
swings within minutes; only what ran close together is compared), the host's loop speed
printed beside the figures.

1. The SDK's first names: `from rocketmq_emulator.client_sdk import EmbeddedBroker,
   Producer, PushConsumer, Message` — CPU of that statement (time.process_time in the
   child) and the whole child's (user + system from wait4: the interpreter's start too),
   and the modules loaded.
2. First use: the same import, then `EmbeddedBroker()` with a topic and a started and shut
   down Producer (CPU in the child): what a program pays before its first message, so a
   cost only moved from the import to the first call shows here.
3. `rocketmq-emulator simulate --messages 20 --json --quiet --out DIR` as a process
   (user + system from wait4), the console script of this environment.
4. Where the import's time goes: `python -X importtime` of (1), each module's own time
   (the smallest of the runs: import time is wall time, and a loaded host adds to it),
   the top modules of each side.

Bytecode: an installed package has its .pyc files (pip compiles them; an editable install
writes them at the first import), but with PYTHONDONTWRITEBYTECODE=1 in the environment
and no __pycache__ in the checkout every project module is compiled from source at each
start — more than half the import's CPU. Each figure is taken both ways: `cached` (the
children read and write .pyc under a temporary PYTHONPYCACHEPREFIX, warmed by one run
before measuring; neither checkout is written to) and `source` (PYTHONDONTWRITEBYTECODE=1,
no prefix: the .pyc files read where they are, none written — a checkout with no
__pycache__ has its modules compiled each time; `./dev` compiles a checkout's modules once
after installing, so one it set up reads them). `--bytecode cached` or `source` takes one
way only.

Usage: python benchmarks/startup_cost.py --tree DIR [--rounds 3] [--top 15] [--bytecode both]
       (--rev REV instead of --tree: a commit of this repository, in a temporary worktree)
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from helpers.bench_host import add_other_side, interleaved, loop_speed, other_tree, revision, tree_env  # noqa: E402

FIRST_NAMES = "from rocketmq_emulator.client_sdk import EmbeddedBroker, Producer, PushConsumer, Message"

_IMPORT = f"""
import json, sys, time
c0 = time.process_time()
{FIRST_NAMES}
cpu = time.process_time() - c0
print(json.dumps({{"cpu": cpu, "modules": len(sys.modules)}}))
"""

_FIRST_USE = f"""
import json, sys, time
c0 = time.process_time()
{FIRST_NAMES}
broker = EmbeddedBroker()
broker.create_topic("StartupTopic")
producer = Producer("StartupGroup", broker)
producer.start()
producer.shutdown()
cpu = time.process_time() - c0
print(json.dumps({{"cpu": cpu, "modules": len(sys.modules)}}))
"""


def run_child(argv: list[str], env: dict | None) -> tuple[str, float]:
    """Run ``argv``: (its stdout, its CPU seconds — user + system, reaped with wait4)."""
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            err.seek(0)
            raise SystemExit(f"a child failed (exit {proc.returncode}): {' '.join(argv[:4])}\n{err.read()[-3000:]}")
    return out, usage.ru_utime + usage.ru_stime


def python_child(code: str, env: dict | None) -> dict:
    out, process_cpu = run_child([sys.executable, "-c", code], env)
    return {**json.loads(out.strip().splitlines()[-1]), "process": process_cpu}


def simulate_child(env: dict | None) -> dict:
    script = Path(sys.executable).with_name("rocketmq-emulator")
    with tempfile.TemporaryDirectory(prefix="startup-") as d:
        out, cpu = run_child([str(script), "simulate", "--messages", "20", "--json", "--quiet",
                              "--out", str(Path(d) / "store")], env)
    summary = json.loads(out.strip().splitlines()[-1])
    if summary.get("succeeded") != 20 or not summary.get("settled"):
        raise SystemExit(f"simulate did not deliver its 20 messages: {summary}")
    return {"process": cpu}


def import_times(env: dict | None) -> dict[str, int]:
    """Each module's own import time in µs, from one `python -X importtime` child."""
    r = subprocess.run([sys.executable, "-X", "importtime", "-c", FIRST_NAMES], env=env,
                       capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"-X importtime failed:\n{r.stderr[-3000:]}")
    own = {}
    for line in r.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _, name = line[len("import time:"):].split("|", 2)
        own[name.strip()] = int(self_us)
    return own


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1e3:6.0f} ms (runs {', '.join(f'{v * 1e3:.0f}' for v in values)})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_other_side(ap)
    ap.add_argument("--rounds", type=int, default=3, help="A B B A rounds per measurement")
    ap.add_argument("--top", type=int, default=15, help="modules listed by own import time, per side")
    ap.add_argument("--bytecode", choices=("both", "cached", "source"), default="both",
                    help="children with .pyc files cached, compiling the project's sources, or both")
    a = ap.parse_args()
    if a.rounds < 1 or a.top < 0:
        ap.error("--rounds >= 1, --top >= 0")
    with other_tree(a.rev, a.tree) as tree:
        run(a, tree)


def bytecode_env(env: dict | None, mode: str, cache: Path) -> dict:
    """``env`` with .pyc files read and written under ``cache`` (mode ``cached``) or not
    written at all (mode ``source``)."""
    env = dict(os.environ if env is None else env)
    if mode == "cached":
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(cache)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
    return env


def run(a, tree: Path) -> None:
    label = {"this": f"this checkout ({revision(REPO)})", "other": f"other ({revision(tree)})"}
    speeds = [loop_speed()]
    print(f"python {platform.python_version()}; host loop speed {speeds[0]:.1f} M steps/CPU-s at the start; "
          f"sides interleaved A B B A, {a.rounds} round(s)")
    modes = ("cached", "source") if a.bytecode == "both" else (a.bytecode,)
    with tempfile.TemporaryDirectory(prefix="startup-pyc-") as caches:
        for mode in modes:
            envs = {s: bytecode_env(None if s == "this" else tree_env(tree), mode, Path(caches) / s)
                    for s in ("this", "other")}
            if mode == "cached":
                for env in envs.values():           # the first run writes the .pyc files
                    python_child(_FIRST_USE, env)
                    simulate_child(env)
            measure_mode(a, mode, envs, label, speeds)
    print(f"\nhost loop speed during the run: {', '.join(f'{x:.1f}' for x in speeds)} M steps/CPU-s")


def measure_mode(a, mode: str, envs: dict, label: dict, speeds: list) -> None:
    imports = interleaved(a.rounds, lambda s: python_child(_IMPORT, envs[s]))
    speeds.append(loop_speed())
    first_use = interleaved(a.rounds, lambda s: python_child(_FIRST_USE, envs[s]))
    speeds.append(loop_speed())
    simulate = interleaved(a.rounds, lambda s: simulate_child(envs[s]))
    speeds.append(loop_speed())
    own = interleaved(a.rounds, lambda s: import_times(envs[s]))
    speeds.append(loop_speed())

    print(f"\n=== bytecode {mode} ===")
    print(f"1. `{FIRST_NAMES}`")
    for s in envs:
        rows = imports[s]
        print(f"  {label[s]:<48} import {ms([r['cpu'] for r in rows])}   whole process "
              f"{ms([r['process'] for r in rows])}   {rows[0]['modules']} modules")
    print("2. first use: that import + EmbeddedBroker() + create_topic + a Producer started and shut down")
    for s in envs:
        rows = first_use[s]
        print(f"  {label[s]:<48} in the child {ms([r['cpu'] for r in rows])}   whole process "
              f"{ms([r['process'] for r in rows])}   {rows[0]['modules']} modules")
    print("3. `rocketmq-emulator simulate --messages 20 --json --quiet --out DIR`, the whole process")
    for s in envs:
        print(f"  {label[s]:<48} {ms([r['process'] for r in simulate[s]])}")
    med = {s: statistics.median(r["cpu"] for r in imports[s]) for s in envs}
    med_use = {s: statistics.median(r["cpu"] for r in first_use[s]) for s in envs}
    med_sim = {s: statistics.median(r["process"] for r in simulate[s]) for s in envs}
    print(f"  other / this: import {med['other'] / med['this']:.2f}x, first use {med_use['other'] / med_use['this']:.2f}x, "
          f"simulate {med_sim['other'] / med_sim['this']:.2f}x")
    for s in envs:
        smallest: dict[str, int] = {}
        for run_ in own[s]:
            for name, us in run_.items():
                smallest[name] = min(us, smallest.get(name, us))
        top = sorted(smallest.items(), key=lambda kv: -kv[1])[:a.top]
        print(f"4. {label[s]}: own import time, smallest of {len(own[s])} `-X importtime` runs "
              f"(sum {sum(smallest.values()) / 1e3:.0f} ms over {len(smallest)} modules); the top {a.top}:")
        for name, us in top:
            print(f"  {us / 1e3:6.1f} ms  {name}")


if __name__ == "__main__":
    main()
