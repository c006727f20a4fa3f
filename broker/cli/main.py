"""The ``rocketmq-emulator`` command: serve, clock, snapshot, analyze, simulate.

Errors are one readable line on stderr and a non-zero exit code (2 for bad usage or
input, 1 for a failure while running).
"""
from __future__ import annotations

import importlib
import os
import sys

from .common import extra_not_installed, fail, version_text

__all__ = ["main"]


def _fail(msg: str, code: int = 2) -> int:
    """An error of the top-level command (no sub-command known)."""
    return fail("", msg, code)


# -- dispatch -----------------------------------------------------------------------------
_USAGE = """usage: rocketmq-emulator COMMAND [options]

commands:
  serve      run the name server + broker (RocketMQ 4.x remoting protocol)
  clock      read or move a server's time: clock now / clock advance 2h --server HOST:PORT
  topic      topics on a server: topic create NAME --queues 4 / list / show NAME / delete NAME
  group      consumer groups: group create NAME [--orderly] / list / show NAME (offsets, lag, retries, DLQ)
  broker     a cluster's brokers (serve --brokers N): broker list / perm NAME --write off / stop / start
  dlq        a group's dead letters: dlq list GROUP / dlq redrive GROUP --all [--dry-run]
  fault      make the broker misbehave: fault add send refuse --times 1 / list / remove ID / clear
  message    message show ID / message find --topic T --key K / message send TOPIC BODY [--tag --key]
  status     each broker's runtime figures (mqadmin brokerStatus)
  offset     offset reset GROUP TOPIC --to earliest|latest|TIME (mqadmin resetOffsetByTime)
  snapshot   take a consistent snapshot of a store: snapshot --data-dir DIR --out SNAP
  analyze    Spark analysis of a snapshot: analyze SNAP --out DIR [--master URL]
  simulate   deterministic simulation run: simulate --seed N --messages M --duration 6h --out DIR

run `rocketmq-emulator COMMAND --help` for a command's options; --version prints the version"""


# What a shell reports for a tool that SIGPIPE ended (128 + 13): `cmd | head -1` stops
# the command that way, quietly.
EXIT_BROKEN_PIPE = 141


def main(argv: list[str] | None = None) -> int:
    """The command line; a reader of stdout that has gone (``| head -1``) ends the
    command quietly, as it ends a Unix tool."""
    try:
        code = _main(argv)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # Python ignores SIGPIPE, so the write raised; point stdout at /dev/null so the
        # interpreter's last flush does not raise again ("Exception ignored ...").
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_BROKEN_PIPE


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print(_USAGE, file=sys.stderr)
        return 2
    if argv[0] in ("-h", "--help", "help"):
        print(_USAGE)
        return 0
    if argv[0] in ("-V", "--version"):
        print(version_text())
        return 0
    cmd, rest = argv[0], argv[1:]
    builtin = _BUILTIN_COMMANDS.get(cmd)
    if builtin is not None:
        module, function = builtin
        return getattr(importlib.import_module(module, "rocketmq_emulator.broker.cli"), function)(rest)
    registered = _registered_command(cmd)
    if registered is None:
        return _fail(f"unknown command {cmd!r}; run `rocketmq-emulator --help`")
    # The extra a command needs is named in its entry point (pyproject.toml): an
    # ImportError while loading or running it is that extra missing, said here for all.
    extra = registered.extras[0] if registered.extras else None
    try:
        command_main = registered.load()
    except ImportError as exc:
        if extra:
            return fail(cmd, extra_not_installed(extra, exc))
        return fail(cmd, f"is not available in this build: {exc}")
    try:
        return command_main(rest)
    except ImportError as exc:
        if extra is None:
            raise
        return fail(cmd, extra_not_installed(extra, exc))


# The broker's own commands: (module, function), imported only when run.
_BUILTIN_COMMANDS = {
    "serve": (".serve", "serve_main"), "clock": (".clock", "clock_main"), "topic": (".topic_group", "topic_main"),
    "group": (".topic_group", "group_main"), "broker": (".brokers", "broker_main"), "dlq": (".dlq", "dlq_main"),
    "offset": (".offsets", "offset_main"), "message": (".messages", "message_main"),
    "status": (".messages", "status_main"), "fault": (".fault_rules", "fault_main"),
}

# Commands of the packages above the broker (simulate, snapshot, analyze) are registered
# as entry points of this group (pyproject.toml), so this module names none of them.
COMMAND_GROUP = "rocketmq_emulator.commands"


def _registered_command(name: str):
    from importlib.metadata import entry_points

    found = entry_points(group=COMMAND_GROUP, name=name)
    return next(iter(found), None)


if __name__ == "__main__":
    sys.exit(main())
