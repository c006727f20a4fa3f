"""The 4.x remoting front of one core: RemotingCommands in, RemotingCommands out.

``handle`` runs a request's processor (the table in ``build_processor_table``: each
reads its command into the core's typed operations and writes the result as 4.x's
reply); what the core notifies for this front's connections (held pulls answered,
consumer ids changed) and what a processor sends clients unasked (RESET_CONSUMER_CLIENT_
OFFSET) and the core's check-backs of transactions (CHECK_TRANSACTION_STATE) become commands that ``take_outgoing`` hands to the driver. A request the core refuses
(RequestRefused) is one WARNING line and its error reply; a bug in a processor is
logged and answered SYSTEM_ERROR, so the broker goes on serving.
"""
from __future__ import annotations

import logging

from ...core_types import Channel
from ...errors import RequestRefused
from ...faults.rules import Operation
from ...log_text import printable
from ...notifications import ConsumerIdsChanged, PullReady, TransactionCheck
from .protocol import (EMULATOR_BROKER_CONTROL, EMULATOR_CLOCK_ADVANCE, EMULATOR_DLQ, RemotingCommand,
                        RequestCode, ResponseCode)
from .processors import build_processor_table
from .processors.pull import pull_response
from .processors.transaction import check_transaction_state
from .fault_answers import HeldPulls, apply_fault, commit_of_pull, late_answer, operation_of, without_commit
from .protocol.fault_codes import DIALECT

__all__ = ["RemotingFront"]


def _nothing() -> None:
    return None

log = logging.getLogger("broker")

# What a stopped cluster member still answers: its port is the name server's too.
_ALWAYS_ANSWERED = frozenset({RequestCode.GET_ROUTEINFO_BY_TOPIC, RequestCode.GET_BROKER_CLUSTER_INFO,
                              RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, RequestCode.DELETE_TOPIC_IN_NAMESRV,
                              EMULATOR_CLOCK_ADVANCE, EMULATOR_BROKER_CONTROL, EMULATOR_DLQ})


class RemotingFront:
    """Addresses ``core`` in 4.x's dialect. One per core and driver (the TCP listener,
    the SDK's in-process hub): the driver calls ``take_outgoing`` after every
    ``handle`` and every tick of the core."""

    def __init__(self, core, *, subscribe: bool = True) -> None:
        """``subscribe=False``: a driver that takes the core's notifications itself (the
        SDK's in-process hub) turns them into commands with ``command_for``."""
        self.core = core
        self._processors = build_processor_table()
        # commands for clients not yet taken (take_outgoing): a driver may test it as a flag
        self.outgoing: list[tuple[Channel, RemotingCommand]] = []
        self.held_pulls = HeldPulls(self)             # pulls a fault rule's hold keeps back
        # held pulls a delay or duplicate rule met: id(request) -> (request, rule)
        self.late_answers: dict[int, tuple] = {}
        unsubscribe = core.subscribe(self._notified, (PullReady, ConsumerIdsChanged, TransactionCheck)) if subscribe \
            else _nothing

        def close() -> None:
            unsubscribe()
            self.held_pulls.close()
        self.close = close

    def connect(self, remote: str) -> Channel:
        """A client connection served by this front."""
        return self.core.connect(remote, owner=self, dialect=DIALECT)

    def _notified(self, n) -> None:
        # (a channel no front opened — a test's own — is any 4.x front's)
        owner = n.channel.owner
        if owner is not self and owner is not None:
            return
        command = self.answer_for(n)
        if command is not None:
            self.outgoing.append((n.channel, command))

    def answer_for(self, n) -> RemotingCommand | None:
        """``command_for``, and what a fault rule makes of a held pull's answer (None: it
        is pushed later)."""
        command = self.command_for(n)
        if self.late_answers and n.__class__ is PullReady:
            return late_answer(self, n, command)
        return command

    def command_for(self, n) -> RemotingCommand:
        """What a notification is in 4.x: a held pull's reply (its context is the
        PULL_MESSAGE command), a half message's CHECK_TRANSACTION_STATE, or
        NOTIFY_CONSUMER_IDS_CHANGED."""
        if n.__class__ is PullReady:
            return pull_response(n.context, n.result)
        if n.__class__ is TransactionCheck:
            return check_transaction_state(n, self.core.config.broker_name)
        return RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": n.group},
                                       oneway=True)

    def handle(self, request: RemotingCommand, channel: Channel) -> RemotingCommand | None:
        """Process one request. None means no reply now (oneway, or a held pull)."""
        core = self.core
        fn = self._processors.get(request.code)
        if core.stopped and request.code not in _ALWAYS_ANSWERED:
            return None if request.is_oneway else request.response(
                ResponseCode.SYSTEM_ERROR, f"broker {core.config.broker_name} is stopped "
                                           f"(rocketmq-emulator broker start {core.config.broker_name})")
        if fn is None:
            # Sent even for oneway requests, as upstream does.
            return request.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                                    f" request type {request.code} not supported")
        if core.faults_active:
            about = operation_of(request)
            if about is not None:
                if commit_of_pull(request):         # an ack inside the pull
                    ack = core.fault_outcome(Operation.ACK, about[1], about[2], channel.client_id, DIALECT)
                    if ack is not None:
                        request = without_commit(self, ack, request)
                outcome = core.fault_outcome(about[0], about[1], about[2], channel.client_id, DIALECT)
                if outcome is not None:
                    answer = apply_fault(self, outcome, request, channel, lambda: self._run(fn, request, channel))
                    return None if request.is_oneway else answer
        response = self._run(fn, request, channel)
        if request.is_oneway:
            return None
        return response

    def _run(self, fn, request: RemotingCommand, channel: Channel) -> RemotingCommand | None:
        """The processor's answer; a refusal or a bug answered, never raised."""
        try:
            response = fn(self, request, channel)
        except RequestRefused as exc:   # the peer's mistake: one line, no traceback
            log.warning("refused request %s from %s: %s", request.code, printable(channel.remote), printable(exc))
            response = request.response(exc.code, str(exc))
        except Exception as exc:  # a bug must not take the broker down; answer and log it
            log.exception("request %s failed", request.code)
            response = request.response(ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")
        return response

    def push(self, channel: Channel, command: RemotingCommand) -> None:
        """Send ``command`` to a client unasked (with the next ``take_outgoing``)."""
        if not channel.closed:
            self.outgoing.append((channel, command))

    @property
    def has_outgoing(self) -> bool:
        return bool(self.outgoing)

    def take_outgoing(self) -> list[tuple[Channel, RemotingCommand]]:
        """Commands for clients since the last call, in order: replies to held pulls,
        NOTIFY_CONSUMER_IDS_CHANGED, pushed commands."""
        out, self.outgoing = self.outgoing, []
        return out
