"""A Pulsar client for Python with retry-letter topics and reconsume_later (issue 22):
in process against the emulator's core, or over TCP to its Pulsar port or a real Pulsar."""
from .client import PulsarClient, Producer
from .consumer import MESSAGE_DELAYLEVEL, Consumer, ConsumerType, DeadLetterPolicy, InitialPosition
from .errors import BrokerError, PulsarClientError, PulsarTimeout
from .messages import Message, MessageId

__all__ = ["PulsarClient", "Producer", "Consumer", "ConsumerType", "InitialPosition", "DeadLetterPolicy",
           "MESSAGE_DELAYLEVEL", "Message", "MessageId", "PulsarClientError", "PulsarTimeout", "BrokerError"]
