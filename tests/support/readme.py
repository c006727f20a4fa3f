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
