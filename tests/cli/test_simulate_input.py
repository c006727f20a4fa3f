"""`rocketmq-emulator simulate` refuses a fault the run would never reach (it starts after
the duration) instead of silently running without it: one line, exit 2, nothing run."""
from __future__ import annotations

import json

import pytest

from rocketmq_emulator.broker.cli import main
from rocketmq_emulator.client_sdk.simulation import Scenario
from rocketmq_emulator.client_sdk.simulation.scenario import ScenarioError

SHORT = ["--messages", "20", "--quiet"]


@pytest.mark.parametrize("fault, says", [
    (["--crash-at", "5h"], "a crash at 5h is after the end of the run (duration 1h)"),
    (["--crash-at", "30m", "--crash-at", "61m"], "a crash at 61m is after the end of the run (duration 1h)"),
    (["--write-off", "2h..3h"], "a write_off window 2h..3h starts after the end of the run (duration 1h)"),
    (["--restart-consumer", "SimGroup@90m"], "a restart of group SimGroup at 90m is after the end of the run"),
])
def test_a_fault_after_the_duration_is_refused(tmp_path, capsys, fault, says):
    out = tmp_path / "run"
    assert main(["simulate", "--duration", "1h", "--out", str(out), *SHORT, *fault]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rocketmq-emulator simulate: error: ") and "\n" not in err
    assert says in err
    assert not out.exists()


def test_faults_inside_the_duration_and_a_window_ending_after_it_still_run(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["simulate", "--duration", "1h", "--out", str(out), "--json", *SHORT, "--crash-at", "1h",
                 "--write-off", "59m..70m", "--restart-consumer", "SimGroup@1h+5m"]) == 0
    assert json.loads(capsys.readouterr().out)["crashes"] == 1


def test_a_scenario_file_gets_the_same_check(tmp_path, capsys):
    f = tmp_path / "s.json"
    f.write_text(json.dumps({"duration": "10m", "crashes": ["20m"]}))
    assert main(["simulate", "--scenario", str(f), "--out", str(tmp_path / "run"), *SHORT]) == 2
    assert "a crash at 20m is after the end of the run (duration 10m)" in capsys.readouterr().err
    with pytest.raises(ScenarioError, match="after the end of the run"):
        Scenario(duration_ms=60_000, crashes_ms=(60_001,))
