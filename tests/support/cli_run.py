"""Run `rocketmq-emulator` in a child process with a bounded wait: a command that should
stop at once but serves instead fails the test (after ``timeout`` seconds) rather than
hanging it. ``prelude`` is Python run first in the child (e.g. to make an import fail
or a method raise), the way a broken install or a bug would behave."""
from __future__ import annotations

import subprocess
import sys

import pytest

CLI_MAIN = "import sys\nfrom rocketmq_emulator.broker.cli.main import main\nsys.exit(main(sys.argv[1:]))\n"


def run_cli(*args: str, prelude: str = "", timeout: float = 30.0) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([sys.executable, "-c", prelude + "\n" + CLI_MAIN, *args],
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"`rocketmq-emulator {' '.join(args)}` was still running after {timeout} s; "
                    f"stdout {exc.stdout!r} stderr {exc.stderr!r}")


def one_error_line(stderr: str, command: str) -> str:
    """The single line of a refused command, checked for the common prefix."""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line, got:\n{stderr}"
    assert lines[0].startswith(f"rocketmq-emulator {command}: error: "), lines[0]
    return lines[0]
