"""`simulate --seeds` on Spark (issue 50): the table is the same whatever the partitions,
each row is what `simulate --json` prints for its seed, a planted bug is found and
shrunk to a repro that replays alone, Ctrl-C keeps the finished rows, a killed worker's
seeds are retried. Seed counts are small: Spark's tasks cost time on a shared machine."""
from __future__ import annotations

import json
import os
import signal
from functools import partial

import pytest

import rocketmq_emulator.client_sdk.simulation.simulator as simulator
from rocketmq_emulator.broker.cli.main import main
from rocketmq_emulator.client_sdk.simulation import GroupSpec, Scenario
from rocketmq_emulator.client_sdk.simulation import swarm_cli
from rocketmq_emulator.client_sdk.simulation.swarm import ROW_COLUMNS, SeedRunner, run_locally
from rocketmq_emulator.spark_analytics.swarm import KILL_ONCE_ENV, read_table, run_swarm
from tests.simulation.test_invariants import LosesSendBacks
from tests.support.cli_run import run_cli

pytestmark = pytest.mark.spark

W1 = dict(poison_every=100, fail_once_every=10, fail_once_remainder=5)
SMALL = ["--messages", "20", "--duration", "5m", "--pattern", "w1", "--quiet"]
RUN_DEPENDENT = ("wall_seconds", "cpu_seconds", "store")      # where and how long, not what


def same_rows(rows):
    return [{k: v for k, v in r.items() if k not in RUN_DEPENDENT} for r in rows]


def test_the_table_is_the_same_for_1_2_and_4_partitions_and_for_the_plain_loop(spark, tmp_path):
    base = Scenario(messages=20, duration_ms=300_000, groups=(GroupSpec(**W1),))
    seeds = list(range(1, 21))
    tables = {}
    for partitions in (1, 2, 4):
        out = tmp_path / f"p{partitions}"
        run = run_swarm(SeedRunner(base, draw_faults=True, keep_dir=str(out / "failing")), seeds, out, ROW_COLUMNS,
                        spark=spark, partitions=partitions)
        assert not run.interrupted and run.partitions == partitions and [r["seed"] for r in run.rows] == seeds
        assert same_rows(read_table(out / "seeds.parquet", ROW_COLUMNS)) == same_rows(run.rows)
        tables[partitions] = same_rows(run.rows)
    assert tables[1] == tables[2] == tables[4]
    assert tables[1] == same_rows(run_locally(SeedRunner(base, draw_faults=True), seeds))
    # the draws differ from seed to seed, and are in the rows
    assert len({json.dumps(r["schedule"], sort_keys=True) for r in tables[1]}) == len(seeds)


def test_a_row_is_what_simulate_json_prints_for_its_seed(spark, tmp_path, capsys):
    out = tmp_path / "swarm"
    assert main(["simulate", "--seeds", "1..6", *SMALL, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("swarm: 6 of 6 seeds in ") and "every invariant held in every seed" in text
    rows = read_table(out / "seeds.parquet", ROW_COLUMNS)
    assert [r["seed"] for r in rows] == list(range(1, 7))
    assert main(["simulate", "--seed", "4", *SMALL, "--out", str(tmp_path / "one"), "--json"]) == 0
    alone = json.loads(capsys.readouterr().out)
    row = rows[3]
    assert {k: row[k] for k in alone if k not in RUN_DEPENDENT} == {k: v for k, v in alone.items()
                                                                     if k not in RUN_DEPENDENT}
    assert row["store"] is None and not (out / "failing").exists()     # a seed that held leaves no store
    assert row["scenario_hash"] == rows[0]["scenario_hash"] and row["cpu_seconds"] > 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["seeds_run"] == 6 and summary["failing_seeds"] == 0 and summary["violations"] == {}


def test_a_planted_bug_is_found_shrunk_and_its_repro_replays_alone(spark, tmp_path, capsys, monkeypatch):
    # the planted bug of tests/simulation: send-backs reported done and never sent (lost messages)
    monkeypatch.setattr(swarm_cli, "SeedRunner", partial(SeedRunner, consumer_class=LosesSendBacks))
    out = tmp_path / "swarm"
    rc = main(["simulate", "--seeds", "1..4", "--messages", "30", "--duration", "5m", "--pattern", "w1",
               "--draw-faults", "--shrink", "--quiet", "--out", str(out)])
    text = capsys.readouterr().out
    assert rc == 1 and "lost: 4 seed(s), first 1, 2, 3, 4" in text
    summary = json.loads((out / "summary.json").read_text())
    repro = next(r for r in summary["repros"] if r["invariant"] == "lost")
    assert repro["seed"] == 1 and repro["messages"] <= 10 and repro["faults"] <= 2
    assert f"replay it: {repro['command']}" in text
    assert (out / "failing" / "seed-1" / "commitlog").is_dir()          # the failing seed's store is kept
    # the printed command, run alone (with the same planted bug), breaks the same invariant
    argv = repro["command"].split()
    assert argv[:2] == ["rocketmq-emulator", "simulate"]
    real = simulator.run_simulation
    monkeypatch.setattr(simulator, "run_simulation",
                        lambda scenario, store, **kw: real(scenario, store, consumer_class=LosesSendBacks, **kw))
    assert main(argv[1:] + ["--json", "--quiet"]) == 1
    replayed = json.loads(capsys.readouterr().out)
    assert {v["invariant"] for v in replayed["violations"]} >= {"lost"}
    assert replayed["messages"] == repro["messages"]
    # analyze reads the swarm's table: violations by invariant and fault action, CPU per seed, with pictures
    assert main(["analyze", str(out), "--out", str(tmp_path / "report"), "--quiet"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == {"seeds": 4, "failing_seeds": 4, "errors": 0, "violations": {"lost": 4}}
    page = (tmp_path / "report" / "report.html").read_text()
    assert "Violations by invariant" in page and "Seeds by fault action" in page and "CPU time per seed" in page
    assert page.count("<img ") == 2 and (tmp_path / "report" / "aggregates" / "by_fault_action.parquet").is_dir()
    actions = {r["fault_action"] for r in spark.read.parquet(str(tmp_path / "report" / "aggregates" /
                                                                  "by_fault_action.parquet")).collect()}
    rows = read_table(out / "seeds.parquet", ROW_COLUMNS)
    assert actions == {a for r in rows for a in r["fault_actions"]}


def test_ctrl_c_stops_the_swarm_and_keeps_the_finished_rows(spark, tmp_path, capsys, monkeypatch):
    class CtrlCAfterTheFirstPartition(swarm_cli.SwarmProgress):
        def __call__(self, rows):
            super().__call__(rows)
            signal.raise_signal(signal.SIGINT)          # as a terminal's Ctrl-C: SIGINT to the process

    monkeypatch.setattr(swarm_cli, "SwarmProgress", CtrlCAfterTheFirstPartition)
    out = tmp_path / "swarm"
    rc = main(["simulate", "--seeds", "1..24", "--partitions", "12", *SMALL[:-1], "--out", str(out)])
    text = capsys.readouterr().out
    assert rc == 130 and "(stopped by Ctrl-C)" in text
    summary = json.loads((out / "summary.json").read_text())
    rows = read_table(out / "seeds.parquet", ROW_COLUMNS)
    assert 2 <= len(rows) == summary["seeds_run"] < 24 and summary["interrupted"]
    # each kept row is whole: what the seed gives when it runs to the end
    base = Scenario(messages=20, duration_ms=300_000, groups=(GroupSpec(**W1),))
    assert same_rows(rows) == same_rows(run_locally(SeedRunner(base), [r["seed"] for r in rows]))
    # the session is usable afterwards (the cancelled jobs are gone)
    assert spark.range(3).count() == 3


def test_a_killed_worker_s_seeds_are_retried_and_every_row_is_there(tmp_path):
    # a Spark of its own (the hook is read where the swarm starts; the default master retries tasks)
    marker = tmp_path / "killed-once"
    out = tmp_path / "swarm"
    env_prelude = f"import os\nos.environ[{KILL_ONCE_ENV!r}] = {str(marker)!r}\n"
    done = run_cli("simulate", "--seeds", "1..6", "--partitions", "3", *SMALL, "--out", str(out), "--json",
                   prelude=env_prelude, timeout=240)
    assert done.returncode == 0, done.stderr
    assert marker.exists()                              # a task's Python worker did die
    summary = json.loads(done.stdout)
    assert summary["seeds_run"] == 6 and not summary["interrupted"]
    assert [r["seed"] for r in read_table(out / "seeds.parquet", ROW_COLUMNS)] == list(range(1, 7))
    assert os.environ.get(KILL_ONCE_ENV) is None


def test_the_readme_guide_as_written(spark, tmp_path, capsys):
    from tests.support.readme import README

    section = README.read_text().split("## Guide: simulation swarms", 1)[1].split("\n## ", 1)[0]
    line = next(ln for ln in section.splitlines() if ln.startswith(".venv/bin/rocketmq-emulator simulate --seeds"))
    args = [a.replace("/tmp/swarm", str(tmp_path / "swarm")) for a in line.split()[1:]]
    rc = main(args + ["--quiet"])
    text = capsys.readouterr().out
    summary = json.loads((tmp_path / "swarm" / "summary.json").read_text())
    assert summary["seeds_run"] == summary["seeds_total"] == 40 and rc == (1 if summary["failing_seeds"] else 0)
    assert text.startswith("swarm: 40 of 40 seeds in ")
    for repro in summary["repros"]:                   # each printed replay line breaks its invariant alone
        assert f"replay it: {repro['command']}" in text
        assert main(repro["command"].split()[1:] + ["--json", "--quiet"]) == 1
        assert repro["invariant"] in {v["invariant"] for v in json.loads(capsys.readouterr().out)["violations"]}
    # the guide's analyze of the swarm's table, as written (its line broken in two in the text)
    words = " ".join(section.split()).split("`rocketmq-emulator analyze ", 1)[1].split("`", 1)[0].split()
    words = [w.replace("/tmp/swarm", str(tmp_path / "swarm")) for w in words]
    assert main(["analyze", *words, "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out)["seeds"] == 40
    assert (tmp_path / "swarm-report" / "report.html").is_file()


def test_a_swarm_through_spark_connect_gives_the_same_rows(tmp_path):
    from tests.support.spark_standalone import SparkConnectServer

    out = tmp_path / "swarm"
    with SparkConnectServer(tmp_path / "connect") as server:
        done = run_cli("simulate", "--seeds", "1..4", "--remote", server.url, *SMALL, "--draw-faults",
                       "--out", str(out), "--json", timeout=300)
    assert done.returncode in (0, 1), done.stderr
    assert json.loads(done.stdout)["seeds_run"] == 4
    base = Scenario(messages=20, duration_ms=300_000, groups=(GroupSpec(**W1),))
    assert same_rows(read_table(out / "seeds.parquet", ROW_COLUMNS)) == \
        same_rows(run_locally(SeedRunner(base, draw_faults=True), [1, 2, 3, 4]))
