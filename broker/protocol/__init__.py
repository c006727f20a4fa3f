"""The RocketMQ 4.x remoting protocol, sans-I/O: commands, codes and the frame codec."""
from .codes import EMULATOR_CLOCK_ADVANCE, LanguageCode, RequestCode, ResponseCode, SerializeType
from .command import CURRENT_VERSION, HeaderError, RemotingCommand

__all__ = [
    "CURRENT_VERSION",
    "EMULATOR_CLOCK_ADVANCE",
    "HeaderError",
    "LanguageCode",
    "RemotingCommand",
    "RequestCode",
    "ResponseCode",
    "SerializeType",
]
