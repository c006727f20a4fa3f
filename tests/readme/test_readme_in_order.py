"""The README's serve-side examples run in the order a reader runs them, against ONE
server, as printed from a fresh clone (the venv not on PATH): the shell commands and
command lists of every guide, and the python blocks that talk to a serve port. Only the
addresses change (tests/support/readme.for_server). So an example that undoes an earlier
one is caught (issue 47: the 5.x example turned the first guide's 4-queue `Orders` into 8
queues): each command must succeed, each block run, and no `topic create` change a topic
an earlier example made. The server is `serve --clock virtual` with every front: the
examples that move the clock say `./dev serve --clock virtual`, and the others do not
depend on the clock's kind."""
from __future__ import annotations

import json
import shlex
import subprocess
import sys
from dataclasses import replace

import pytest

from tests.support.processes import EmulatorProcess
from tests.support.readme import README, VENV_BIN, for_server, promised, reader_env, serve_side_examples

pytest.importorskip("rocketmq.grpc_protocol", reason="needs the grpc extra: ./dev test installs it")
pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
pytest.importorskip("aiohttp", reason="needs the http extra: ./dev test installs it")
pytestmark = pytest.mark.interop            # it drives pulsar-client and the 5.x Python client

# What one server cannot run, each with its reason (checked to be still in the README).
NOT_HERE = {
    "Guide: test your failover (a cluster in one process)":
        "its commands are for `./dev serve --brokers 2` (a cluster: broker-b, broker perm, stop, start)",
}
NOT_RUN = {
    "rocketmq-emulator dlq redrive billing --all": "a group with dead letters: none of the examples run here leaves "
                                                   "one in billing (the ali-ons consumer would, after its 16 "
                                                   "retries; Node.js, tests/interop); with none it says so, exit 2",
    "rocketmq-emulator topic delete Scratch": "a synopsis line: deletes a topic of the reader's own (none of the "
                                              "README's examples makes Scratch)",
}


def test_what_is_not_run_is_still_in_the_readme():
    examples = serve_side_examples()
    assert {e.section for e in examples} >= set(NOT_HERE)
    assert {e.text for e in examples} >= set(NOT_RUN)


def test_the_readme_examples_run_in_order_against_one_server(tmp_path):
    examples = [e for e in serve_side_examples() if e.section not in NOT_HERE and e.text not in NOT_RUN]
    assert {e.kind for e in examples} == {"command", "python"} and len(examples) > 20
    server = EmulatorProcess(tmp_path / "store", "--clock", "virtual", grpc=True, pulsar=True, http=True).start()
    failures = []
    try:
        for example in examples:
            done = run(example, server)
            said = done.stdout + done.stderr
            if done.returncode != 0:
                failures.append(f"{example}\n  exit {done.returncode}: {said.strip()[-1500:]}")
            elif example.kind == "python" and done.stdout.split("\n")[:len(promised(example.text))] != \
                    promised(example.text):
                failures.append(f"{example}\n  printed {done.stdout!r}, the README says {promised(example.text)}")
            elif example.kind == "command" and " topic create " in example.text and " updated" in done.stdout:
                failures.append(f"{example}\n  changed a topic an earlier example made: {done.stdout.strip()}")
        failures += topics_undone(examples, server)
    finally:
        server.stop()
    assert not failures, "\n".join(failures)


def topics_undone(examples, server) -> list[str]:
    """Each topic a README command made with --queues N still has N queues after every
    example ran (a later one, e.g. inside a python block, may have changed it)."""
    undone = []
    for example in examples:
        words = example.text.split()
        if example.kind != "command" or words[1:3] != ["topic", "create"] or "--queues" not in words:
            continue
        topic, queues = words[3], int(words[words.index("--queues") + 1])
        shown = run(replace(example, text=f"rocketmq-emulator topic show {topic} --json"), server)
        now = len(json.loads(shown.stdout)) if shown.returncode == 0 else shown.stderr.strip()
        if now != queues:
            undone.append(f"{example}\n  {topic} has {now} queues after the README's examples, not {queues}")
    return undone


def run(example, server) -> subprocess.CompletedProcess:
    if example.kind == "python":
        argv = [sys.executable, "-c", for_server(example.text, server)]
    else:
        argv = shlex.split(for_server(example.text, server))
        argv[0] = str(VENV_BIN / "rocketmq-emulator")     # a bare `rocketmq-emulator`: the README says which
        if "--server" not in argv:
            argv += ["--server", server.address]          # the README's default, 127.0.0.1:9876
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=reader_env(), cwd=README.parent)
