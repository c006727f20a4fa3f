"""One rule for every command: a user mistake (bad input, or input the server refuses)
is one line `rocketmq-emulator <command>: error: ...` and exit code 2; a failure while
running is exit 1. And the CLI's output conventions: `--json` everywhere it prints
something (clock included), typed JSON, ISO 8601 times in readable output, a help line
for every positional and option of every command."""
from __future__ import annotations

import argparse
import json
import re

import pytest

from rocketmq_emulator.broker.cli.main import main
from tests.support.cli_run import one_error_line, run_cli
from tests.support.processes import EmulatorProcess

ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = EmulatorProcess(tmp_path_factory.mktemp("rule") / "store", "--clock", "virtual").start()
    assert main(["topic", "create", "Orders", "--queues", "1", "--server", s.address]) == 0
    assert main(["group", "create", "billing", "--server", s.address]) == 0
    assert main(["message", "send", "Orders", "hello", "--server", s.address]) == 0
    yield s
    s.stop()


@pytest.mark.parametrize("argv, command, says", [
    (["topic", "create", "TBW102"], "topic create", "conflict with system topic"),
    (["group", "create", "bad name!"], "group create", "illegal characters"),
    (["offset", "reset", "billing", "Orders", "--to", "yesterday"], "offset reset", "--to takes"),
    (["dlq", "list", "../../etc"], "dlq list", "../../etc"),
    (["clock", "advance", "-5s"], "clock advance", "durations are positive"),
    (["clock", "advance", "0s"], "clock advance", "durations are positive"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_a_user_mistake_is_one_prefixed_line_and_exit_2(server, argv, command, says):
    done = run_cli(*argv, "--server", server.address)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert says in one_error_line(done.stderr, command)
    assert done.stdout == ""


MANY_DIGITS = "9" * 5000


@pytest.mark.parametrize("argv, command, says", [
    (["offset", "reset", "billing", "Orders", "--to", MANY_DIGITS], "offset reset", "epoch ms from 0 to"),
    (["offset", "reset", "billing", "Orders", "--to", "9223372036854775808"], "offset reset", "epoch ms from 0 to"),
    (["message", "find", "Orders", "k", "--max", MANY_DIGITS], "message find", "from 1 to 1000"),
    (["fault", "add", "send", "refuse", "--times", MANY_DIGITS], "fault add", "from 1 to 9223372036854775807"),
    (["fault", "remove", MANY_DIGITS], "fault remove", "from 0 to 9223372036854775807"),
    (["topic", "show", "Orders", "--timeout", "1e300"], "topic show", "at most 86400"),
    (["clock", "advance", "106751991167d"], "clock advance", "cannot go past 9999-12-31"),
    (["clock", "advance", "9" * 19 + "d"], "clock advance", "cannot go past 9999-12-31"),
], ids=["offset-5000-digits", "offset-past-a-long", "find-max", "fault-times", "fault-remove-id", "timeout",
        "clock-past-9999", "clock-past-a-long"])
def test_every_number_has_the_bound_of_its_field_in_one_short_line(server, argv, command, says):
    """Issue 46.8: a number past its field's bound is a one-line exit 2 (was a ValueError
    traceback, exit 1, for `offset reset --to` with 5,000 digits), and the line says the
    argument shortened."""
    done = run_cli(*argv, "--server", server.address)
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    line = one_error_line(done.stderr, command)
    assert says in line and len(line) < 400 and "Traceback" not in done.stderr


@pytest.mark.parametrize("argv, command", [
    (["topic", "show", "T\nrocketmq-emulator topic show: error: forged"], "topic show"),
    (["group", "show", "g\x1b[2J\x1b[31mred"], "group show"),
    (["fault", "list", "extra\nforged line"], "fault"),
    (["topic", "show", "Orders", "--bogus\nforged"], "topic"),
    (["offset", "reset", "billing", "Orders", "--to", "soon\u202eforged"], "offset reset"),
    (["dlq", "list", "A\u202eB\rforged"], "dlq list"),
], ids=["topic-newline", "group-esc", "argparse-extra", "argparse-option", "offset-rlo", "dlq-cr"])
def test_an_error_line_escapes_what_it_repeats_of_the_arguments(server, argv, command):
    """Issue 46.8: newlines, ESC and bidi overrides of an argument are escaped in the error
    line, so one error is one line that cannot forge another or drive the terminal."""
    done = run_cli(*argv, "--server", server.address)
    assert done.returncode == 2, (done.returncode, done.stderr)
    one_error_line(done.stderr, command)
    assert not any(c in done.stderr.rstrip("\n") for c in "\n\r\x1b\u202e"), done.stderr


def test_clock_now_and_advance_speak_json(server, capsys):
    assert main(["clock", "now", "--json", "--server", server.address]) == 0
    now = json.loads(capsys.readouterr().out)
    assert now["clock"] == "virtual" and isinstance(now["now_ms"], int) and re.fullmatch(ISO, now["time"])
    assert main(["clock", "advance", "10s", "--json", "--server", server.address]) == 0
    moved = json.loads(capsys.readouterr().out)
    assert moved["now_ms"] == now["now_ms"] + 10_000 and moved["advanced_ms"] == 10_000


def test_clock_advance_next_moves_to_the_next_due_message(server, capsys):
    assert main(["clock", "advance", "next", "--server", server.address]) == 2        # nothing waits yet
    assert "no message is waiting" in capsys.readouterr().err
    assert main(["clock", "now", "--json", "--server", server.address]) == 0
    before = json.loads(capsys.readouterr().out)["now_ms"]
    assert main(["message", "send", "Orders", "later", "--delay-level", "3", "--server", server.address]) == 0
    capsys.readouterr()
    assert main(["clock", "advance", "next", "--json", "--server", server.address]) == 0
    moved = json.loads(capsys.readouterr().out)
    assert moved["advanced_ms"] == 10_000 and moved["now_ms"] == before + 10_000        # level 3: 10 s


def test_status_json_has_numbers_and_booleans(server, capsys):
    assert main(["status", "--json", "--server", server.address]) == 0
    table = json.loads(capsys.readouterr().out)["broker-a"]
    assert isinstance(table["clockNowMillis"], int) and isinstance(table["commitLogMaxOffset"], int)
    assert table["stopped"] is False and isinstance(table["brokerPermission"], int) and table["topics"] >= 1
    assert isinstance(table["clock"], str) and isinstance(table["brokerVersionDesc"], str)


def test_readable_times_are_iso(server, capsys):
    assert main(["topic", "show", "Orders", "--server", server.address]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert re.search(ISO, rows[1]) and not re.search(r"\b\d{13}\b", rows[1]), rows
    assert main(["status", "--server", server.address]) == 0
    out = capsys.readouterr().out
    assert re.search(rf"clockNowMillis\s+\d+ \({ISO}\)", out) and re.search(rf"bootTimestamp\s+\d+ \({ISO}\)", out)
    assert main(["message", "find", "--topic", "Orders", "--key", "nokey", "--server", server.address]) == 0
    capsys.readouterr()


def _parsers():
    """Every parser of every command, found by running each with --help and catching the
    parser as it parses (sub-commands' parsers through their subparsers action)."""
    seen = []
    real = argparse.ArgumentParser.parse_args

    def spy(self, args=None, namespace=None):
        seen.append(self)
        raise SystemExit(0)

    argparse.ArgumentParser.parse_args = spy
    try:
        for command in ("serve", "clock", "topic", "group", "broker", "dlq", "message", "status", "offset",
                        "snapshot", "analyze", "simulate"):
            try:
                main([command, "--help"])
            except SystemExit:
                pass
    finally:
        argparse.ArgumentParser.parse_args = real
    out = []
    todo = [(p.prog, p) for p in seen]
    while todo:
        prog, parser = todo.pop()
        out.append((prog, parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo += [(sub.prog, sub) for sub in action.choices.values()]
    return out


def test_every_positional_and_option_of_every_command_has_a_help_line():
    parsers = _parsers()
    assert len(parsers) >= 20
    missing = [f"{prog} {a.option_strings[0] if a.option_strings else a.dest}" for prog, p in parsers
               for a in p._actions
               if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)) and not (a.help or "").strip()]
    assert not missing, missing
