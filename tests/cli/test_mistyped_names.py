"""A name that is not there is a mistake, not an empty answer: every command that names a
topic or a group says so in one line with exit code 2, suggesting the closest name the
brokers have (Ordrs -> Orders, biling -> billing); a name that exists but holds nothing
is still an empty answer (exit 0)."""
from __future__ import annotations

import pytest

from rocketmq_emulator.broker.cli.main import main
from tests.support.cli_run import one_error_line, run_cli
from tests.support.processes import EmulatorProcess


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = EmulatorProcess(tmp_path_factory.mktemp("names") / "store", "--clock", "virtual", brokers=2).start()
    assert main(["topic", "create", "Orders", "--queues", "1", "--server", s.address]) == 0
    assert main(["group", "create", "billing", "--server", s.address]) == 0
    assert main(["message", "send", "Orders", "hello", "--key", "k", "--server", s.address]) == 0
    yield s
    s.stop()


MISTYPED = {
    "message-find": (["message", "find", "--topic", "Ordrs", "--key", "k"], "message find", "topic", "Ordrs", "Orders"),
    "message-show": (["message", "show", "0" * 32, "--topic", "Ordrs"], "message show", "topic", "Ordrs", "Orders"),
    "topic-show": (["topic", "show", "Ordrs"], "topic show", "topic", "Ordrs", "Orders"),
    "topic-delete": (["topic", "delete", "Ordrs"], "topic delete", "topic", "Ordrs", "Orders"),
    "dlq-list": (["dlq", "list", "biling"], "dlq list", "group", "biling", "billing"),
    "dlq-redrive": (["dlq", "redrive", "biling", "--all"], "dlq redrive", "group", "biling", "billing"),
    "group-show": (["group", "show", "biling"], "group show", "group", "biling", "billing"),
    "offset-reset-group": (["offset", "reset", "biling", "Orders", "--to", "earliest"], "offset reset", "group",
                           "biling", "billing"),
    "offset-reset-topic": (["offset", "reset", "billing", "Ordrs", "--to", "earliest"], "offset reset", "topic",
                           "Ordrs", "Orders"),
}


@pytest.mark.parametrize("case", sorted(MISTYPED))
def test_a_mistyped_name_is_exit_2_with_the_closest_name(server, case):
    argv, command, kind, typed, meant = MISTYPED[case]
    done = run_cli(*argv, "--server", server.address)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    line = one_error_line(done.stderr, command)
    assert f"no {kind} named {typed!r}" in line and f"did you mean {meant!r}?" in line, line
    assert done.stdout == ""


def test_a_name_like_nothing_there_gets_no_suggestion(server):
    done = run_cli("dlq", "list", "zzzzzz", "--server", server.address)
    assert done.returncode == 2
    line = one_error_line(done.stderr, "dlq list")
    assert "no group named 'zzzzzz'" in line and "did you mean" not in line and "group list" in line


def test_names_that_exist_but_hold_nothing_are_empty_answers(server, capsys):
    assert main(["dlq", "list", "billing", "--server", server.address]) == 0
    assert "no dead letters for billing" in capsys.readouterr().out
    assert main(["message", "find", "--topic", "Orders", "--key", "nope", "--server", server.address]) == 0
    assert "no message of Orders has key nope" in capsys.readouterr().out


def test_a_server_without_the_emulators_group_request_is_asked_what_mqadmin_asks(tmp_path, capsys):
    """Against a broker that does not know EMULATOR_GROUPS (a real RocketMQ answers
    REQUEST_CODE_NOT_SUPPORTED), the groups are its subscription group configs."""
    from rocketmq_emulator.broker.core import BrokerCore
    from rocketmq_emulator.broker.fronts.remoting.protocol import EMULATOR_GROUPS, RemotingCommand, ResponseCode
    from rocketmq_emulator.delay_scheduler import VirtualClock
    from tests.support.remoting import RawClient, ServerThread

    core = BrokerCore.in_memory(VirtualClock())
    srv = ServerThread(core)
    srv.server.front._processors.pop(EMULATOR_GROUPS)     # as a real RocketMQ broker
    try:
        core.config.listen_port = srv.port
        assert RawClient(srv.port).call(RemotingCommand.request(EMULATOR_GROUPS, {})).code == \
            ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        address = f"127.0.0.1:{srv.port}"
        assert main(["group", "create", "billing", "--server", address]) == 0
        capsys.readouterr()
        assert main(["group", "show", "biling", "--server", address]) == 2
        assert "did you mean 'billing'?" in capsys.readouterr().err
        assert main(["group", "show", "billing", "--server", address]) == 0        # known, nothing to show yet
        assert "billing has no offsets and no dead letters yet" in capsys.readouterr().out
    finally:
        srv.stop()
        core.close()
