"""Admin requests with a body that is not the document they take (issue 46, item 6): the
answer is a RocketMQ response code with a readable remark and one escaped WARNING
line, never a traceback or a Python exception's text. The Java broker answers such a
request SYSTEM_ERROR (its processor throws, and NettyRemotingAbstract answers an
uncaught exception SYSTEM_ERROR: reference rocketmq-4x.md §1); nothing is changed."""
from __future__ import annotations

import logging

import pytest

from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.fronts.remoting.front import RemotingFront
from rocketmq_emulator.broker.fronts.remoting.processors import build_processor_table
from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode as RQ, ResponseCode as RC
from rocketmq_emulator.delay_scheduler import VirtualClock

# what a Python exception's text looks like in a remark
PYTHON_TEXT = ("Error:", "Exception", "Traceback", "__init__", "positional argument")
HOSTILE_BODIES = [b"", b"{}", b"[]", b'"x"', b"null", b"12", b"not key value", b"\xff\xfe\x00\x1b[31m",
                  b'{"groupName":null}', b'{"groupName":5}', b"=\n=", b"brokerPermission=abc",
                  b"brokerPermission=99999999999999999999", b'{"mqSet":[{}]}', b'{"consumerDataSet":[{}]}',
                  b'{"producerDataSet":[5]}', b'{"offsetTable":{"x":1}}']


@pytest.fixture
def front():
    core = BrokerCore.in_memory(VirtualClock())
    yield RemotingFront(core)
    core.close()


def call(front, code, body: bytes, header=None):
    return front.handle(RemotingCommand.request(code, header, body), front.core.connect("127.0.0.1:50001"))


def tracebacks(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.exc_info]


@pytest.mark.parametrize("body, says", [
    (b"{}", "groupName"),
    (b'{"groupName":null,"retryMaxTimes":3}', "groupName"),
])
def test_a_subscription_group_without_its_name_is_refused_readably(front, caplog, body, says):
    reply = call(front, RQ.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body)
    assert reply.code == RC.SYSTEM_ERROR and says in reply.remark
    assert not any(word in reply.remark for word in PYTHON_TEXT), reply.remark
    assert tracebacks(caplog) == []
    [line] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "refused request 200" in line
    assert None not in front.core.groups.table and "" not in front.core.groups.table


@pytest.mark.parametrize("body", [b"not key value", b"{}", b"\x1b[31mred\nbrokerPermission"])
def test_a_broker_config_that_is_not_properties_text_is_refused_readably(front, caplog, body):
    reply = call(front, RQ.UPDATE_BROKER_CONFIG, body)
    assert reply.code == RC.SYSTEM_ERROR and "key=value" in reply.remark
    assert not any(word in reply.remark for word in PYTHON_TEXT), reply.remark
    assert tracebacks(caplog) == []
    [line] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "refused request 25" in line and "\x1b" not in line and "\n" not in line
    assert front.core.config.broker_permission == 6


def test_no_request_answers_a_hostile_body_with_a_traceback(front, caplog):
    """Every request code the front serves, with each body (and no header): whatever
    the answer, it is a code and a remark, not a bug's traceback."""
    for code in sorted(build_processor_table()):
        for body in HOSTILE_BODIES:
            reply = call(front, code, body)
            assert tracebacks(caplog) == [], (code, body)
            if reply is not None and reply.code != RC.SUCCESS:
                assert not any(word in (reply.remark or "") for word in PYTHON_TEXT), (code, body, reply.remark)
