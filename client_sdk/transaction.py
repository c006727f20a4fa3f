"""Transactional sends (RocketMQ 4.x's TransactionMQProducer, for ``Producer``): a half
message, the local transaction, END_TRANSACTION; and the broker's check-backs
(CHECK_TRANSACTION_STATE) answered by the producer's checker.

    def local_transaction(msg, arg):            # runs after the half message is stored
        db.save(arg)
        return LocalTransactionState.COMMIT_MESSAGE   # or ROLLBACK_MESSAGE, or UNKNOW

    producer = Producer("orders-tx", broker, transaction_checker=lambda msg: state_of(msg))
    result = producer.send_message_in_transaction(Message("Orders", b"..."), local_transaction, arg=order)

As DefaultMQProducerImpl#sendMessageInTransaction does: the message goes with TRAN_MSG=true
and PGROUP (its DELAY dropped); a send that was not stored rolls back without running
the local transaction; an exception from it counts as UNKNOW (logged) and its text goes
to the broker as END_TRANSACTION's remark; the end is sent oneway. UNKNOW leaves the half
message to the broker's check-back: ``transactionTimeOut`` (6 s) after it was stored, then
every ``transactionCheckInterval`` (60 s), up to ``transactionCheckMax`` (15) times, each
answered by ``transaction_checker(msg)`` (msg: the half message, under its topic); after
the last it is discarded (TRANS_CHECK_MAX_TIME_TOPIC).
"""
from __future__ import annotations

import enum
import logging
from typing import Any, Callable, NamedTuple

from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode
from rocketmq_emulator.store.records import Prop, RecordError, SysFlag, decode_offset_msg_id, decode_record

from .message import MessageExt, SendResult, SendStatus
from .roles import ProducerRole


__all__ = ["LocalTransactionState", "TransactionSendResult", "LocalTransaction", "TransactionChecker",
           "send_in_transaction", "answer_check", "decode_checked_message"]

log = logging.getLogger("client_sdk.transaction")


class LocalTransactionState(enum.Enum):
    """LocalTransactionState: what the local transaction (or a check) says."""

    COMMIT_MESSAGE = "COMMIT_MESSAGE"
    ROLLBACK_MESSAGE = "ROLLBACK_MESSAGE"
    UNKNOW = "UNKNOW"                   # RocketMQ's spelling
    UNKNOWN = "UNKNOW"                  # (the same state)


# END_TRANSACTION's commitOrRollback
_FLAGS = {LocalTransactionState.COMMIT_MESSAGE: SysFlag.TRANSACTION_COMMIT,
          LocalTransactionState.ROLLBACK_MESSAGE: SysFlag.TRANSACTION_ROLLBACK,
          LocalTransactionState.UNKNOW: 0}

LocalTransaction = Callable[[Any, Any], LocalTransactionState]
TransactionChecker = Callable[[MessageExt], LocalTransactionState]


class TransactionSendResult(NamedTuple):
    """TransactionSendResult: the half message's SendResult, the transaction id and
    what the local transaction said (ROLLBACK_MESSAGE when the send was not stored)."""

    send_result: SendResult
    transaction_id: str
    local_transaction_state: LocalTransactionState

    @property
    def msg_id(self) -> str:
        return self.send_result.msg_id

    @property
    def send_status(self) -> SendStatus:
        return self.send_result.status


def send_in_transaction(producer: ProducerRole, topic: str, body: bytes, flag: int, props: dict,
                        local_transaction: LocalTransaction, msg, arg) -> TransactionSendResult:
    """The half message, the local transaction, the end (see the module doc)."""
    props.pop(Prop.DELAY, None)
    props[Prop.TRAN_MSG] = "true"
    props[Prop.PGROUP] = producer.group
    result = producer.send_raw(topic, body, flag, props)
    state, error = LocalTransactionState.ROLLBACK_MESSAGE, None
    if result.status is SendStatus.SEND_OK:
        try:
            state = _state(local_transaction(msg, arg), "the local transaction")
        except Exception as exc:            # the application's: UNKNOW, and the broker asks later
            log.warning("producer %s: the local transaction of %s raised %s: %s; left UNKNOW for the broker's "
                        "check-back", producer.group, result.msg_id, type(exc).__name__, exc)
            state, error = LocalTransactionState.UNKNOW, exc
    _, commit_log_offset = decode_offset_msg_id(result.offset_msg_id)
    remark = f"executeLocalTransactionBranch exception: {error}" if error is not None else None
    _end(producer, result.msg_id, state, commit_log_offset, result.queue_offset, from_check=False, remark=remark,
         broker=result.queue.broker_name)
    return TransactionSendResult(result, result.msg_id, state)


def decode_checked_message(body: bytes) -> MessageExt | None:
    """The message of a CHECK_TRANSACTION_STATE (None: its body does not decode)."""
    try:
        rec = decode_record(body, 0, check_crc=False)
        if rec.sys_flag & SysFlag.COMPRESSED:
            import zlib
            rec.body = zlib.decompress(rec.body)
    except (RecordError, ValueError) as exc:
        log.warning("a CHECK_TRANSACTION_STATE whose message does not decode (%s); ignored", exc)
        return None
    return MessageExt.adopt(rec)


def answer_check(producer: ProducerRole, cmd: RemotingCommand, msg: MessageExt) -> None:
    """The broker asks how a transaction ended: the checker's answer, as END_TRANSACTION
    from the check (an exception from the checker: UNKNOW, and its text as remark)."""
    checker = producer.transaction_checker
    error = None
    if checker is None:
        log.warning("producer %s has no transaction_checker: the broker's check of %s is answered UNKNOW",
                    producer.group, msg.msg_id)
        state = LocalTransactionState.UNKNOW
    else:
        try:
            state = _state(checker(msg), "the transaction checker")
        except Exception as exc:            # the application's
            log.warning("producer %s: the transaction checker raised %s for %s: %s", producer.group,
                        type(exc).__name__, msg.msg_id, exc)
            state, error = LocalTransactionState.UNKNOW, exc
    _end(producer, cmd.header("transactionId") or msg.msg_id, state, int(cmd.header("commitLogOffset") or 0),
         int(cmd.header("tranStateTableOffset") or 0), from_check=True,
         remark=f"checkLocalTransactionState exception: {error}" if error is not None else None,
         msg_id=msg.msg_id, broker=cmd.header("bname"))


def _state(value, what: str) -> LocalTransactionState:
    if isinstance(value, LocalTransactionState):
        return value
    if value is None:
        return LocalTransactionState.UNKNOW
    try:
        return LocalTransactionState(value)
    except ValueError:
        raise TypeError(f"{what} returned {value!r}; expected a LocalTransactionState (COMMIT_MESSAGE, "
                        f"ROLLBACK_MESSAGE, UNKNOW)") from None


def _end(producer: ProducerRole, transaction_id: str, state: LocalTransactionState, commit_log_offset: int,
         queue_offset: int, *, from_check: bool, remark: str | None, msg_id: str | None = None,
         broker: str | None = None) -> None:
    """END_TRANSACTION, oneway (EndTransactionRequestHeader), to ``broker``: the one that
    holds the half message (bname, as 5.x's RPC headers name it; a cluster's transport
    routes by it)."""
    header = {"producerGroup": producer.group, "tranStateTableOffset": queue_offset,
              "commitLogOffset": commit_log_offset, "commitOrRollback": _FLAGS[state],
              "fromTransactionCheck": from_check, "msgId": msg_id or transaction_id, "transactionId": transaction_id}
    if broker:
        header["bname"] = broker
    cmd = RemotingCommand.request(RequestCode.END_TRANSACTION, header, oneway=True)
    cmd.remark = remark
    producer.end_transaction_oneway(cmd)
