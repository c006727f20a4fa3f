"""`rocketmq-emulator simulate` refuses a fault the run would never reach (it starts after
the duration) instead of silently running without it: one line, exit 2, nothing run."""
from __future__ import annotations

import json

import pytest

from rocketmq_emulator.broker.cli.main import main
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


# -- options of another protocol (issue 35, item 7) ----------------------------------------
@pytest.mark.parametrize("given, needs", [
    (["--retry-letters", "level"], "--protocol pulsar"),
    (["--nack-delay", "10s"], "--protocol pulsar"),
    (["--ack-timeout", "10s"], "--protocol pulsar"),
    (["--retry-delay", "5s"], "--protocol pulsar"),
    (["--retry-level", "2"], "--protocol pulsar"),
    (["--invisible-time", "30s"], "--protocol 5.x"),
    (["--protocol", "5.x", "--nack-delay", "10s"], "--protocol pulsar"),
    (["--protocol", "pulsar", "--invisible-time", "30s"], "--protocol 5.x"),
    (["--protocol", "4.x", "--retry-letters", "increasing"], "--protocol pulsar"),
    (["--protocol", "pulsar", "--retry-level", "2"], "--retry-letters level"),
    (["--protocol", "pulsar", "--retry-letters", "increasing", "--retry-delay", "5s"], "--retry-letters delay"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_an_option_of_another_protocol_is_refused_naming_the_one_it_needs(tmp_path, capsys, given, needs):
    out = tmp_path / "run"
    assert main(["simulate", "--out", str(out), *SHORT, *given]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rocketmq-emulator simulate: error: ") and "\n" not in err
    assert needs in err, err
    assert not out.exists()


def test_a_scenario_files_group_with_another_protocols_setting_is_refused(tmp_path):
    with pytest.raises(ScenarioError, match="nack_delay_seconds is for Pulsar groups"):
        Scenario.from_dict({"groups": [{"name": "g", "nack_delay_seconds": 10}]})
    with pytest.raises(ScenarioError, match="invisible_seconds is for 5.x groups"):
        Scenario.from_dict({"groups": [{"name": "g", "protocol": "pulsar", "invisible_seconds": 30}],
                            "topics": [{"name": "SimTopic", "queues": 1}]})


def test_help_shows_every_default():
    import re

    from rocketmq_emulator.client_sdk.simulation.cli import _parser

    parser = _parser()
    blocks, current = {}, None
    for line in parser.format_help().splitlines():
        m = re.match(r"^  (-[-\w]+)", line)           # an option's first line (continuations are indented more)
        if m:
            current = m.group(1)
        if current:
            blocks[current] = blocks.get(current, "") + " " + line.strip()
    takes_a_value = [a.option_strings[0] for a in parser._actions
                     if a.option_strings and a.nargs != 0 and not a.required and a.option_strings[0] != "--help"]
    assert "--pattern" in takes_a_value
    missing = [name for name in takes_a_value if "default" not in blocks[name]]
    assert not missing, missing


@pytest.mark.parametrize("protocol, says, not_said", [
    ("4.x", "send-backs", None),
    ("5.x", "broker retries", "send-backs"),
    ("pulsar", "redeliveries", "send-backs"),
])
def test_the_summary_names_what_each_protocol_counts(tmp_path, capsys, protocol, says, not_said):
    extra = ["--nack-delay", "1s"] if protocol == "pulsar" else []
    assert main(["simulate", "--out", str(tmp_path / "run"), "--messages", "30", "--pattern", "w1", "--quiet",
                 "--protocol", protocol, *extra]) == 0
    out = capsys.readouterr().out
    assert says in out, out
    if not_said:
        assert not_said not in out, out


@pytest.mark.parametrize("args, says", [
    (["--duration", "999999999999d"], "duration must be <= "),
    (["--duration", "1h", "--settle", "999999999999d"], "settle must be <= "),
])
def test_a_run_longer_than_the_clock_can_go_is_refused(tmp_path, capsys, args, says):
    """Issue 46.8: the run's time is the virtual clock's, which stops at 9999-12-31 (it
    ran for ever, and would have crossed what a record's timestamp takes)."""
    out = tmp_path / "run"
    assert main(["simulate", "--out", str(out), *SHORT, *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rocketmq-emulator simulate: error: ") and says in err and "\n" not in err
    assert not out.exists()


@pytest.mark.parametrize("option", ["--seed", "--messages", "--protocol"])
def test_an_argument_argparse_refuses_is_repeated_shortened(tmp_path, capsys, option):
    out = tmp_path / "run"
    assert main(["simulate", "--out", str(out), *SHORT, option, "9" * 5000]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"rocketmq-emulator simulate: error: argument {option}: ") and "\n" not in err
    assert "'9999999999999999999999999999999999999999...(5000 characters)'" in err and len(err) < 300
