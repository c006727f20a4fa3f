"""The RocketMQ 4.x remoting protocol, sans-I/O: commands, codes and the frame codec."""
from .codec import DEFAULT_MAX_FRAME_SIZE, FrameDecoder, decode, encode, mark_protocol_type
from .codes import (EMULATOR_BROKER_CONTROL, EMULATOR_CLOCK_ADVANCE, EMULATOR_DLQ, EMULATOR_FAULTS, EMULATOR_GROUPS,
                    EMULATOR_TRANSACTIONS, EMULATOR_LITE, LanguageCode, RequestCode, ResponseCode, SerializeType)
from .command import CURRENT_VERSION, HeaderError, RemotingCommand
from .errors import LocalProtocolError, ProtocolError, RequestRefused

__all__ = [
    "CURRENT_VERSION",
    "DEFAULT_MAX_FRAME_SIZE",
    "EMULATOR_CLOCK_ADVANCE",
    "EMULATOR_BROKER_CONTROL",
    "EMULATOR_DLQ",
    "EMULATOR_FAULTS",
    "EMULATOR_GROUPS",
    "EMULATOR_TRANSACTIONS",
    "EMULATOR_LITE",
    "FrameDecoder",
    "HeaderError",
    "LanguageCode",
    "LocalProtocolError",
    "ProtocolError",
    "RemotingCommand",
    "RequestCode",
    "RequestRefused",
    "ResponseCode",
    "SerializeType",
    "decode",
    "encode",
    "mark_protocol_type",
]
