"""README examples kept as tests: the text between a test file's ``# --- README example:
begin ---`` and ``end`` markers must be one of README.md's python blocks, verbatim; and
the README's serve-side examples run as a reader runs them from a fresh clone, against a
test server (``for_server``: only the addresses change, and ``.venv/bin/`` is the venv
the tests run in), with that venv not on PATH (``reader_env``)."""
from __future__ import annotations

import os
import pathlib
import re
import sys
from dataclasses import dataclass

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"
# The venv the tests run in: the README's `.venv/bin/` (./dev makes it at the checkout's root).
VENV_BIN = pathlib.Path(sys.executable).parent


def python_blocks(text: str | None = None) -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text() if text is None else text, re.S)


def assert_readme_shows(test_file: str) -> None:
    here = pathlib.Path(test_file).read_text()
    example = here.split("# --- README example: begin ---\n")[1].split("# --- README example: end ---")[0]
    assert example.strip() in [b.strip() for b in python_blocks()], \
        f"README.md and {pathlib.Path(test_file).name} differ"


def promised(block: str) -> list[str]:
    """What a block's `print(...)  # value` lines promise it prints, in order."""
    return re.findall(r"^print\(.*\)\s+#\s*(.+)$", block, re.M)


def for_server(text: str, server) -> str:
    """A README example pointed at ``server`` (an EmulatorProcess): the README's ports
    (9876 remoting, 8081 gRPC, 6650 Pulsar, 8080 HTTP) become the ones it listens on, and
    `.venv/bin/` the test's venv."""
    ports = {"9876": server.port, "8081": server.grpc_port, "6650": server.pulsar_port, "8080": server.http_port}
    for readme_port, port in ports.items():
        if port is not None:
            text = text.replace(f"127.0.0.1:{readme_port}", f"127.0.0.1:{port}")
    return text.replace(".venv/bin/", f"{VENV_BIN}/")


def reader_env() -> dict[str, str]:
    """The environment of a reader on a fresh clone: the venv is not activated (not on
    PATH), so a bare `rocketmq-emulator` is not found."""
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and pathlib.Path(p) != VENV_BIN]
    return {**os.environ, "PATH": os.pathsep.join(path)}


# -- the serve-side examples, in the order a reader meets them --------------------------
# The commands that talk to a running server (each takes --server HOST:PORT).
SERVER_COMMANDS = {"clock", "topic", "group", "broker", "dlq", "fault", "message", "status", "offset"}
# README addresses of the serve ports: a python block naming one talks to a server.
README_ADDRESSES = ("127.0.0.1:9876", "127.0.0.1:8081", "127.0.0.1:6650", "127.0.0.1:8080")
# A synopsis line's placeholder: ID, NAME, N ...
_PLACEHOLDER = re.compile(r"\b[A-Z]+\b")


@dataclass(frozen=True)
class Example:
    line: int                   # where it starts in README.md
    section: str                # the `## ` heading it is under
    kind: str                   # "command" (one CLI line, as argv) or "python" (a block)
    text: str

    def __str__(self) -> str:
        return f"README.md:{self.line} ({self.section}): {self.text.splitlines()[0]}"


def serve_side_examples(text: str | None = None) -> list[Example]:
    """Every example of README.md that talks to a running `serve`, in README order: the
    `rocketmq-emulator` server commands of the ```sh blocks and of the indented command
    lists (a synopsis `a | b` is two commands, `[--opt]` is left out, a line with a
    placeholder such as ID is not run), and the python blocks that name a serve port."""
    lines = (README.read_text() if text is None else text).split("\n")
    found, section, i = [], "", 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            section = line[3:].strip()
        if line.startswith("```"):
            fence = line[3:].strip()
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            body = "\n".join(lines[i + 1:end])
            if fence == "python" and any(a in body for a in README_ADDRESSES):
                found.append(Example(i + 2, section, "python", body + "\n"))
            elif fence == "sh":
                for n, command in _logical_lines(lines[i + 1:end], i + 2):
                    found += _commands(n, section, command)
            i = end + 1
            continue
        if line.startswith("    rocketmq-emulator ") and not lines[i - 1].strip():
            while i < len(lines) and lines[i].startswith("    "):
                found += _commands(i + 1, section, lines[i].strip())
                i += 1
            continue
        i += 1
    return found


def _logical_lines(block: list[str], first: int):
    """(line number, text) of a shell block's commands, `\\` continuations joined."""
    held, start = "", first
    for n, raw in enumerate(block, first):
        if not held:
            start = n
        if raw.rstrip().endswith("\\"):
            held += raw.rstrip()[:-1] + " "
            continue
        yield start, held + raw
        held = ""


def _commands(n: int, section: str, line: str) -> list[Example]:
    line = re.sub(r"\s+#.*$", "", line).strip()                   # its comment
    if not line.startswith((".venv/bin/rocketmq-emulator ", "rocketmq-emulator ")):
        return []
    program, rest = line.split(" ", 1)
    out = []
    for alternative in rest.split(" | "):                          # a synopsis: one command each
        alternative = re.sub(r"\s*\[[^]]*\]", "", alternative).strip()    # [--optional] left out
        if alternative.split()[0] in SERVER_COMMANDS and not _PLACEHOLDER.search(alternative.replace("--", " ")):
            out.append(Example(n, section, "command", f"{program} {alternative}"))
    return out
