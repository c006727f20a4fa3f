"""`rocketmq-emulator simulate`: the summary, --json, exit codes and bad input."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import rocketmq_emulator.client_sdk.simulation.simulator as simulator
from rocketmq_emulator.broker.cli.main import main

from .test_invariants import LosesSendBacks

SHORT = ["--messages", "120", "--duration", "10m", "--pattern", "w1", "--quiet"]


def test_json_output_has_the_shared_counts_and_the_store_is_left_behind(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["simulate", "--seed", "4", "--out", str(out), "--json", *SHORT]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {k: data[k] for k in ("produced", "succeeded", "dead_lettered", "send_backs", "invariant_violations")} \
        == {"produced": 120, "succeeded": 118, "dead_lettered": 2, "send_backs": 12 + 2 * 17,
            "invariant_violations": 0}
    assert data["settled"] is True and (out / "commitlog").is_dir() and (out / "config").is_dir()


def test_no_idle_skip_runs_every_request_and_writes_the_same_store(tmp_path, capsys):
    runs = {}
    for flag in ([], ["--no-idle-skip"]):
        out = tmp_path / ("plain" if flag else "skip")
        assert main(["simulate", "--seed", "4", "--out", str(out), "--json", *SHORT, *flag]) == 0
        data = json.loads(capsys.readouterr().out)
        log = b"".join(p.read_bytes() for p in sorted((out / "commitlog").iterdir()))
        runs[bool(flag)] = (data["idle_runs_carried"], data["deliveries"], log)
    assert runs[True][0] == 0 and runs[False][0] > 100       # the retry ladder's idle minutes
    assert runs[True][1:] == runs[False][1:]


def test_readable_summary(tmp_path, capsys):
    assert main(["simulate", "--seed", "4", "--out", str(tmp_path / "run"), *SHORT]) == 0
    text = capsys.readouterr().out
    assert "120/120 messages accepted" in text and "dead-lettered 2" in text and "every invariant held" in text


def test_a_broken_invariant_exits_1_and_names_it(tmp_path, capsys, monkeypatch):
    real = simulator.run_simulation
    monkeypatch.setattr(simulator, "run_simulation",
                        lambda scenario, out, **kw: real(scenario, out, consumer_class=LosesSendBacks, **kw))
    assert main(["simulate", "--seed", "4", "--out", str(tmp_path / "run"), "--settle", "1h", *SHORT]) == 1
    text = capsys.readouterr().out
    assert "invariant violation(s)" in text and "[lost]" in text


@pytest.mark.parametrize("args, says", [
    (["--messages", "-1"], "messages must be >= 0"),
    (["--rate", "-5"], "rate must be a number > 0"),
    (["--fail-probability", "1.5"], "fail_probability must be between 0 and 1"),
    (["--duration", "soon"], "--duration"),
    (["--write-off", "5m"], "START..END"),
    (["--restart-consumer", "Nobody@1m"], "unknown group 'Nobody'"),
    (["--frobnicate"], "unrecognized arguments: --frobnicate"),
])
def test_bad_options_are_one_line_and_exit_2(tmp_path, capsys, args, says):
    assert main(["simulate", "--out", str(tmp_path / "run"), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and "\n" not in err
    assert not (tmp_path / "run").exists()                # nothing was started


@pytest.mark.parametrize("text, says", [
    ('{"messages": 10,', "is not valid JSON"),
    ('{"mesages": 10}', "unknown scenario option(s) mesages"),
    ('{"groups": [{"name": "G", "poison": 3}]}', "unknown group option(s) poison"),
    ('{"producers": [{"topic": "Elsewhere"}]}', "does not declare"),
    ('[1, 2]', "a scenario is a JSON object"),
])
def test_a_malformed_scenario_file_is_one_line_and_exit_2(tmp_path, capsys, text, says):
    f = tmp_path / "scenario.json"
    f.write_text(text)
    assert main(["simulate", "--scenario", str(f), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and "\n" not in err


def test_a_scenario_file_drives_the_run(tmp_path, capsys):
    f = tmp_path / "scenario.json"
    f.write_text(json.dumps({
        "messages": 90, "duration": "15m", "topics": [{"name": "Orders", "queues": 2}],
        "producers": [{"topic": "Orders", "rate": 50, "body_size": 64}],
        "groups": [{"name": "billing", "topic": "Orders", "poison_every": 30, "batch_size": 2},
                   {"name": "audit", "topic": "Orders", "orderly": True, "max_reconsume_times": 1,
                    "fail_probability": 0.1}],
        "crashes": ["40s"], "write_off": [["5s", "8s"]],
        "consumer_restarts": [{"group": "audit", "at": "1m", "down": "20s"}]}))
    assert main(["simulate", "--seed", "9", "--scenario", str(f), "--out", str(tmp_path / "run"), "--json",
                 "--quiet"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["produced"] == 90 and data["crashes"] == 1 and data["invariant_violations"] == 0
    assert data["groups"]["billing"]["dead_lettered"] >= 3    # 3 poison; a crash may duplicate a copy


def test_an_existing_non_empty_out_dir_is_refused(tmp_path, capsys):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "keep.txt").write_text("mine")
    assert main(["simulate", "--out", str(tmp_path / "run"), *SHORT]) == 2
    assert "not an empty directory" in capsys.readouterr().err
    assert (tmp_path / "run" / "keep.txt").read_text() == "mine"


def test_the_console_script_runs_it(tmp_path):
    script = Path(sys.executable).with_name("rocketmq-emulator")
    proc = subprocess.run([str(script), "simulate", "--seed", "4", "--out", str(tmp_path / "run"), "--json",
                           *SHORT], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["dead_lettered"] == 2


def test_the_readme_scenario_example_is_a_valid_scenario():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("## Guide: deterministic simulation", 1)[1]
    block = section.split("```json\n", 1)[1].split("```", 1)[0]
    from rocketmq_emulator.client_sdk.simulation import Scenario
    scenario = Scenario.from_dict(json.loads(block))
    assert [g.name for g in scenario.groups] == ["billing", "audit"] and scenario.crashes_ms == (1_800_000,)


def run_readme_simulation_line(marker: str, out_dir, tmp_path) -> dict:
    """The simulation guide's command line with ``marker`` in it, run as written (its
    --out replaced by a directory of the test), with --json: what it printed."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("## Guide: deterministic simulation", 1)[1]
    line = next(ln for ln in section.splitlines() if marker in ln and ln.startswith(".venv/bin/"))
    args = line.split()[1:]
    args[args.index(out_dir)] = str(tmp_path / "out")
    script = Path(sys.executable).with_name("rocketmq-emulator")
    proc = subprocess.run([str(script), *args, "--json", "--quiet"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    printed = json.loads(proc.stdout)
    assert printed["invariant_violations"] == 0 and printed["settled"] and printed["crashes"] == 1
    return printed


def test_the_readme_5x_simulation_line_runs_as_written(tmp_path):
    printed = run_readme_simulation_line("--protocol 5.x", "/tmp/sim5", tmp_path)
    assert printed["dead_lettered"] == 10 and printed["succeeded"] == 990


def test_the_readme_pulsar_simulation_line_runs_as_written(tmp_path):
    printed = run_readme_simulation_line("--protocol pulsar", "/tmp/simp", tmp_path)
    assert printed["dead_lettered"] == 10 and printed["succeeded"] == 990
    assert printed["groups"]["SimGroup"]["max_redelivery_count"] == 16


def test_the_readme_cluster_simulation_line_runs_as_written(tmp_path):
    printed = run_readme_simulation_line("--brokers 2", "/tmp/simc", tmp_path)
    assert printed["dead_lettered"] == 10 and printed["succeeded"] == 990
    assert (tmp_path / "out" / "brokers" / "broker-b" / "commitlog").is_dir()
