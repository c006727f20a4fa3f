"""END_TRANSACTION (37): a 4.x producer commits or rolls back a half message, or answers a
check-back (CHECK_TRANSACTION_STATE, which RemotingFront sends from the core's
TransactionCheck); the core decides (broker/rocketmq_model/transactions.py). And EMULATOR_TRANSACTIONS:
the half messages waiting, for `topic show`, `group show` and scripts."""
from __future__ import annotations

import json
import logging

from rocketmq_emulator.store.records import SysFlag, encode_record

from ....log_text import printable
from ....operations import EndOutcome, EndTransaction, Resolution
from ..protocol import RemotingCommand, RequestCode, ResponseCode as RC

__all__ = ["end_transaction", "transactions_request", "check_transaction_state", "RESOLUTIONS", "resolution_flag"]

log = logging.getLogger("broker")

# commitOrRollback: the transaction bits of MessageSysFlag
RESOLUTIONS = {SysFlag.TRANSACTION_COMMIT: Resolution.COMMIT, SysFlag.TRANSACTION_ROLLBACK: Resolution.ROLLBACK,
               0: Resolution.UNKNOWN}
_FLAGS = {v: k for k, v in RESOLUTIONS.items()}


def resolution_flag(resolution: Resolution) -> int:
    """commitOrRollback for a Resolution (the SDK's END_TRANSACTION header)."""
    return _FLAGS[resolution]


def end_transaction(front, request, channel):
    """EndTransactionRequestHeader: producerGroup, tranStateTableOffset, commitLogOffset,
    commitOrRollback, fromTransactionCheck, msgId, transactionId. Sent oneway by the Java
    client (nothing reaches it); a request that wants an answer gets SUCCESS, or
    SYSTEM_ERROR with upstream's remark. UNKNOWN is answered nothing, as upstream."""
    flag = request.header_int("commitOrRollback")
    resolution = RESOLUTIONS.get(flag)
    if resolution is None:
        log.warning("END_TRANSACTION from %s: commitOrRollback %d is not 0, 8 or 12; ignored",
                    printable(channel.remote), flag)
        return None
    tid = request.header("transactionId") or request.header("msgId") or ""
    result = front.core.end_transaction(EndTransaction(
        request.header_str("producerGroup"), tid, resolution, request.header_bool("fromTransactionCheck"),
        request.header_int("commitLogOffset", -1), request.header_int("tranStateTableOffset", -1)))
    if result.outcome in (EndOutcome.COMMITTED, EndOutcome.ROLLED_BACK):
        return request.response(RC.SUCCESS)
    if result.outcome is EndOutcome.LEFT_WAITING:
        return None
    log.warning("END_TRANSACTION from %s for %s: %s", printable(channel.remote), printable(tid, 80),
                printable(result.remark))
    return request.response(RC.SYSTEM_ERROR, result.remark)


def check_transaction_state(check, broker_name: str) -> RemotingCommand:
    """CHECK_TRANSACTION_STATE, oneway (Broker2Client#checkProducerTransactionState): the
    header says which half copy is asked about; the body is the message, as
    MessageDecoder.encode writes it, under its real topic and queue."""
    from dataclasses import replace

    body = encode_record(replace(check.record))
    return RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, {
        "tranStateTableOffset": check.queue_offset, "commitLogOffset": check.commit_log_offset,
        "msgId": check.transaction_id, "transactionId": check.transaction_id, "offsetMsgId": check.offset_msg_id,
        "bname": broker_name}, body, oneway=True)


def transactions_request(front, request, channel):
    """Header ``topic`` (optional): the half messages waiting (of that topic) on every
    running broker, and the topic's 5.x message type. Body: {"half_messages": [...],
    "message_type": "FIFO" | null}."""
    from ....cluster import live_members

    topic = request.header("topic") or None
    waiting, message_type = [], None
    for core in live_members(front.core):
        waiting += [dict(m.to_json(), broker=core.config.broker_name) for m in core.waiting_transactions(topic)]
        tc = core.topic_config(topic) if topic else None
        if tc is not None and tc.message_type is not None:
            message_type = tc.message_type
    waiting.sort(key=lambda m: (m["stored_ms"], m["transaction_id"]))
    return request.response(RC.SUCCESS, body=json.dumps({"half_messages": waiting,
                                                          "message_type": message_type}).encode())
