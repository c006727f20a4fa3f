"""A `serve --clock virtual` restarted on its data dir resumes its time: never before
the time it had reached (saved with the store) nor before a stored message."""
from __future__ import annotations

import re

import pytest

from rocketmq_emulator.broker.cli.main import main
from rocketmq_emulator.broker.fronts.remoting.protocol import EMULATOR_CLOCK_ADVANCE, RemotingCommand, ResponseCode as RC
from rocketmq_emulator.delay_scheduler import VirtualClock
from rocketmq_emulator.store import MessageStore

from tests.broker.fronts.remoting.listener.test_wire_facts import send_req
from ..support.processes import EmulatorProcess
from ..support.remoting import RawClient

START = VirtualClock.DEFAULT_START_MS
HOUR = 3_600_000


def server_now(port: int) -> int:
    """The server's clock, read by an advance of nothing (what `clock now` sends)."""
    c = RawClient(port)
    try:
        reply = c.call(RemotingCommand.request(EMULATOR_CLOCK_ADVANCE, {"millis": 0}))
        assert reply.code == RC.SUCCESS, reply.remark
        return int(reply.ext_fields["nowMillis"])
    finally:
        c.close()


def advance(port: int, duration: str, then_send: bool) -> None:
    c = RawClient(port)
    try:
        assert c.call(RemotingCommand.request(EMULATOR_CLOCK_ADVANCE, {"duration": duration})).code == RC.SUCCESS
        if then_send:
            assert c.call(send_req("T", b"sent at +2h")).code == RC.SUCCESS
    finally:
        c.close()


def stored_times(data_dir) -> list[int]:
    with MessageStore(data_dir) as store:
        times = []
        for qid in store.queues().get("T", []):
            for off in range(store.min_offset("T", qid), store.max_offset("T", qid)):
                times.append(store.look_message_by_offset(store.queue_entry("T", qid, off)[0]).store_timestamp)
        return times


@pytest.mark.parametrize("ending, then_send", [("stop", True), ("kill -9", True), ("kill -9", False)],
                         ids=["stop", "kill-9", "kill-9-after-an-advance-alone"])
def test_a_restarted_virtual_server_resumes_its_time(tmp_path, ending, then_send):
    data_dir = tmp_path / "store"
    first = EmulatorProcess(data_dir, "--clock", "virtual").start()
    assert server_now(first.port) == START
    advance(first.port, "2h", then_send)
    if ending == "stop":
        first.stop()
    else:
        first.kill()        # at once: an advance is written before its reply, a send before its own
    assert stored_times(data_dir) == ([START + 2 * HOUR] if then_send else [])
    second = EmulatorProcess(data_dir, "--clock", "virtual").start()
    try:
        assert server_now(second.port) >= START + 2 * HOUR
    finally:
        second.stop()


def test_the_newest_stored_message_bounds_the_clock_without_a_saved_time(tmp_path):
    """A store written by a real-clock server (no saved virtual time): a virtual server
    on it starts at its newest message, not back in 2024."""
    data_dir = tmp_path / "store"
    first = EmulatorProcess(data_dir).start()                 # real clock
    c = RawClient(first.port)
    assert c.call(send_req("T", b"real time")).code == RC.SUCCESS
    c.close()
    first.stop()
    (stored,) = stored_times(data_dir)
    second = EmulatorProcess(data_dir, "--clock", "virtual").start()
    try:
        assert server_now(second.port) >= stored
    finally:
        second.stop()


def test_a_damaged_saved_clock_stops_the_start_in_one_line(tmp_path):
    data_dir = tmp_path / "store"
    EmulatorProcess(data_dir, "--clock", "virtual").start().stop()
    (data_dir / "config" / "virtualClock.json").write_text('{"nowMillis": "soon"}')
    with pytest.raises(RuntimeError, match="virtualClock.json holds .*fix or remove it"):
        EmulatorProcess(data_dir, "--clock", "virtual").start()


def test_clock_commands_print_a_readable_utc_time(tmp_path, capsys):
    server = EmulatorProcess(tmp_path / "store", "--clock", "virtual").start()
    try:
        assert main(["clock", "advance", "90m", "--server", server.address]) == 0
        out = capsys.readouterr().out.strip()
        assert out == f"clock now {START + 90 * 60_000} ms (2024-01-01T01:30:00.000Z)"
        assert main(["clock", "now", "--server", server.address]) == 0
        assert capsys.readouterr().out.strip() == out
    finally:
        server.stop()


def test_clock_now_works_on_a_real_clock_server_and_says_so(tmp_path, capsys):
    server = EmulatorProcess(tmp_path / "store").start()
    try:
        assert main(["clock", "now", "--server", server.address]) == 0
        out = capsys.readouterr().out.strip()
        assert re.fullmatch(r"clock now \d{13} ms \(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\), real clock", out), out
        assert main(["clock", "advance", "1s", "--server", server.address]) == 2     # a user mistake
        assert "real clock" in capsys.readouterr().err
    finally:
        server.stop()
