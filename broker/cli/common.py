"""What every ``rocketmq-emulator`` command shares: one error style and help that shows
defaults and choices.

A mistake on the command line is one line on stderr, ``rocketmq-emulator <command>:
error: ...`` (always one: what the line repeats of the arguments or of a name is escaped by
broker/log_text.printable, as every name a command prints is: ``shown``), and exit code 2 —
argparse's own errors included (they would otherwise print the whole usage first), and so
is input the server refuses (a system topic, an illegal group name, a name no broker has,
advancing a real clock). A number past the field it feeds (a 64-bit offset or time, a
count) is such a mistake too (``int_in_range``, ``whole_number``). A failure while
running (a server that cannot be reached, a store that cannot be written) uses the same
prefix and exit 1. Readable output writes times as ISO 8601 UTC (``iso_utc``); ``--json``
gives numbers and booleans as JSON numbers and booleans, and names its fields in
snake_case (``snake_case`` turns the camelCase of a RocketMQ body into it).
"""
from __future__ import annotations

import argparse
import importlib
import re
import shlex
import sys
import textwrap
from pathlib import Path

from ..log_text import printable

__all__ = ["CommandParser", "UsageError", "fail", "usage_error", "int_in_range", "positive_float", "missing_extra",
           "extra_not_installed", "install_command", "version_text", "iso_utc", "snake_case", "shown", "quoted",
           "whole_number", "LONG_MAX"]

DIST = "rocketmq-emulator"
LONG_MAX = 2 ** 63 - 1              # a Java long: offsets, timestamps, ids on the wire
# an error line says what it refused, but a 10,000-character argument does not fill the screen
_ERROR_LINE_MAX = 2000


def shown(name, limit: int | None = 300) -> str:
    """A name (a topic, a group, a client id, a key...) as a command prints it: one line,
    control and format characters escaped, a very long one cut with its length said
    (``limit`` None: never cut, for a message's body)."""
    return printable("" if name is None else name, limit)


class UsageError(Exception):
    """Bad input on a command line; the message is one readable line."""


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's help, with ``(default: X)`` after every option that has a default
    worth saying (not None, False or an empty list) and whose help does not say it."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        unsaid = default is None or default is False or default is argparse.SUPPRESS or default == []
        if "%(default)" in text or "(default: " in text or unsaid or not action.option_strings:
            return text
        return f"{text} (default: %(default)s)" if text else "(default: %(default)s)"

    def _split_lines(self, text, width):
        # Never at a hyphen: option names, paths and client ids stay whole.
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False, break_long_words=False)


class CommandParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors raise UsageError (one line, exit 2 at the top)
    instead of printing the usage and exiting; sub-commands get the same class."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message):
        raise UsageError(f"{self.prog}: error: {message}")

    # argparse repeats a refused argument whole ("invalid int value: '999...'", "invalid
    # choice: ..."): an argument of 5,000 characters is said shortened, as ours are
    def _get_value(self, action, arg_string):
        try:
            return super()._get_value(action, arg_string)
        except argparse.ArgumentError as exc:
            raise _shortened(exc, action, arg_string) from None

    def _check_value(self, action, value):
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError as exc:
            raise _shortened(exc, action, value) from None


def _shortened(exc: argparse.ArgumentError, action, value) -> argparse.ArgumentError:
    whole = repr(value)
    if not isinstance(value, str) or len(value) <= 40 or whole not in exc.message:
        return exc
    return argparse.ArgumentError(action, exc.message.replace(whole, quoted(value)))


def fail(command: str, msg: str, code: int = 2) -> int:
    """Print ``rocketmq-emulator <command>: error: msg`` and return ``code``."""
    prog = f"{DIST} {command}" if command else DIST
    print(printable(f"{prog}: error: {msg}", _ERROR_LINE_MAX), file=sys.stderr)
    return code


def usage_error(exc: UsageError) -> int:
    """A command line argparse refused: its one line (prefixed already), exit 2."""
    print(printable(str(exc), _ERROR_LINE_MAX), file=sys.stderr)
    return 2


def int_in_range(lo: int, hi: int, what: str = "a whole number"):
    """An argparse type: an int in [lo, hi]; the error names the range."""
    def parse(text: str) -> int:
        value = whole_number(text)
        if value is None:
            raise argparse.ArgumentTypeError(f"expected {what} from {lo} to {hi}, got {quoted(text)}")
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"must be from {lo} to {hi}, got {value}")
        return value
    return parse


def whole_number(text: str) -> int | None:
    """``text`` as an int when it is one of at most 40 ASCII digits (with a sign), else
    None: no field a command feeds is wider than 64 bits, and Python refuses to read
    more than 4,300 digits at all."""
    body = text.strip()
    digits = body[1:] if body[:1] in "+-" else body
    if not (digits.isascii() and digits.isdigit() and len(digits) <= 40):
        return None
    return int(body)


def quoted(text: str) -> str:
    """An argument as an error line repeats it: quoted, escaped, cut after 40 characters."""
    return f"'{printable(text, 40)}'"


# a command's wait (a socket's timeout): a day is past any answer, and within what a
# socket's timeval takes (1e300 s is an OverflowError there)
_SECONDS_MAX = 86_400


def positive_float(text: str) -> float:
    """An argparse type: a number of seconds > 0, at most a day."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {quoted(text)}") from None
    if not 0 < value <= _SECONDS_MAX:
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0 and at most {_SECONDS_MAX}, got "
                                         f"{quoted(text)}")
    return value


def missing_extra(extra: str, *modules: str) -> str | None:
    """None when every module imports; else the one line saying which extra to install."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            return extra_not_installed(extra, exc)
    return None


def extra_not_installed(extra: str, exc: ImportError | None = None) -> str:
    """``needs the X extra, which is not installed (why): COMMAND``: every message about
    a missing extra, with the command that installs it from where the user is."""
    why = f" ({exc})" if exc is not None else ""
    return f"needs the {extra} extra, which is not installed{why}: {install_command(extra)}"


# The repository's root when this package runs from a source checkout (broker/cli/ is
# two folders below it); installed, that folder is rocketmq_emulator/ in site-packages.
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]


def install_command(extra: str, *, package_root: Path | None = None, prefix: Path | None = None,
                    cwd: Path | None = None, executable: str | None = None) -> str:
    """The command that installs ``extra`` for the Python running now. From a source
    checkout (pyproject.toml and ./dev at its root), an editable install of that
    checkout: with the venv ./dev made, `.venv/bin/pip install -e '.[X]'` (run in the
    checkout), else this Python's pip on the checkout; `pip install
    'rocketmq-emulator[X]'` from the published package would install another copy.
    From an installed package, the package's extra. The keywords are for tests."""
    root = package_root or _PACKAGE_ROOT
    if not ((root / "pyproject.toml").is_file() and (root / "dev").is_file()):
        return f"pip install '{DIST}[{extra}]'"
    prefix = Path(prefix or sys.prefix)
    if prefix.resolve() == (root / ".venv").resolve():
        command = f".venv/bin/pip install -e '.[{extra}]'"
        here = Path(cwd or Path.cwd()).resolve()
        return command if here == root.resolve() else f"cd {shlex.quote(str(root))} && {command}"
    return f"{shlex.quote(executable or sys.executable)} -m pip install -e {shlex.quote(f'{root}[{extra}]')}"


def version_text() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"{DIST} {version(DIST)}"
    except PackageNotFoundError:
        return f"{DIST} (version unknown: the distribution is not installed)"


def iso_utc(ms: int) -> str:
    """Epoch milliseconds as the CLI writes every time: ISO 8601, UTC, milliseconds,
    2024-01-01T02:00:00.000Z."""
    import datetime

    t = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(milliseconds=ms)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def snake_case(name: str) -> str:
    """A camelCase field name of a RocketMQ body as the CLI's JSON names fields:
    brokerOffset -> broker_offset, lastUpdateTimestamp -> last_update_timestamp."""
    return _HUMP.sub("_", name).lower()
