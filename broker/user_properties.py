"""Which of a stored message's properties are its user's: what a consumer of any dialect
is shown as the message's properties, and what a re-drive carries over. Not the user's:
RocketMQ's own (MessageConst's STRING_HASH_SET: CLUSTER, UNIQ_KEY, __CRC32# ...), the 5.x
proxy's, and the Pulsar front's bookkeeping (the client's metadata, the producer name and
sequence id, delivery time, key, chunks). One set, read by every front."""
from __future__ import annotations

from rocketmq_emulator.store.accounting import PULSAR_CHUNK_PROPERTY
from rocketmq_emulator.store.records import SYSTEM_PROPERTY_KEYS, Prop

from .pulsar_model.cursors import CHUNK_OFFSETS_PROPERTY, DELIVER_AT_PROPERTY, KEY_PROPERTY
from .pulsar_model.producers import PRODUCER_PROPERTY, SEQUENCE_PROPERTY
from .rocketmq_model.message_types import LITE_TOPIC_PROPERTY, PRIORITY_PROPERTY

__all__ = ["NOT_USER_PROPERTIES", "user_properties"]

# (what the 5.x proxy keeps out of a message's user properties, beside STRING_HASH_SET: like
# its GrpcConverter, a FIFO message's __SHARDINGKEY and a transaction's __transactionId__
# are shown)
_PROXY_PROPERTIES = {Prop.TIMER_DELIVER_MS, Prop.TIMER_DELAY_MS, Prop.TIMER_DELAY_SEC, "__BORNHOST",
                     "BORN_TIMESTAMP", "POP_CK", "1ST_POP_TIME", "TIMER_OUT_MS", "TIMER_ENQUEUE_MS",
                     LITE_TOPIC_PROPERTY, PRIORITY_PROPERTY}
_PULSAR_FRONT_PROPERTIES = {"PULSAR_METADATA", PRODUCER_PROPERTY, SEQUENCE_PROPERTY, DELIVER_AT_PROPERTY,
                            KEY_PROPERTY, PULSAR_CHUNK_PROPERTY, CHUNK_OFFSETS_PROPERTY}
NOT_USER_PROPERTIES = SYSTEM_PROPERTY_KEYS | _PROXY_PROPERTIES | _PULSAR_FRONT_PROPERTIES


def user_properties(props: dict) -> dict:
    return {k: v for k, v in props.items() if k not in NOT_USER_PROPERTIES}
