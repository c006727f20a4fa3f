"""The broker's answers every Pulsar command handler builds: ERROR, SUCCESS, SEND_ERROR,
ACK_RESPONSE, and a command as a frame (reference pulsar-protocol.md §10)."""
from __future__ import annotations

from . import schema as s
from .frames import encode_simple

__all__ = ["frame", "error", "success", "send_error", "ack_response", "request_id_of"]


def frame(cmd) -> bytes:
    return encode_simple(cmd.SerializeToString())


def error(request_id: int, code: int, message: str) -> bytes:
    cmd = s.BaseCommand(type=s.Type.ERROR)
    cmd.error.request_id, cmd.error.error, cmd.error.message = request_id, code, message
    return frame(cmd)


def success(request_id: int) -> bytes:
    cmd = s.BaseCommand(type=s.Type.SUCCESS)
    cmd.success.request_id = request_id
    return frame(cmd)


def send_error(req, code: int, message: str) -> bytes:
    cmd = s.BaseCommand(type=s.Type.SEND_ERROR)
    e = cmd.send_error
    e.producer_id, e.sequence_id, e.error, e.message = req.producer_id, req.sequence_id, code, message
    return frame(cmd)


def sent_message(req, frame_):
    """A SEND's message as the broker reads it, persistent or not: (metadata bytes,
    payload, MessageMetadata, None), or (None, None, None, the SEND_ERROR saying why not:
    a checksum that does not match, metadata that does not parse)."""
    try:
        parts = frame_.metadata_and_payload(checked=True)
        if parts is None:
            return None, None, None, send_error(req, s.ServerError.ChecksumError, "checksum failed on the broker")
        raw_meta, payload = parts
        return raw_meta, payload, s.MessageMetadata.FromString(raw_meta), None
    except Exception as exc:
        return None, None, None, send_error(req, s.ServerError.UnknownError, f"bad message metadata: {exc}")


def ack_response(req, code: int | None = None, message: str = "") -> bytes:
    cmd = s.BaseCommand(type=s.Type.ACK_RESPONSE)
    r = cmd.ackResponse
    r.consumer_id, r.request_id = req.consumer_id, req.request_id
    if code is not None:
        r.error, r.message = code, message
    return frame(cmd)


def request_id_of(cmd) -> int:
    """The request_id of the command ``cmd`` carries (0 when it has none)."""
    for field, value in cmd.ListFields():
        if field.message_type is not None and "request_id" in field.message_type.fields_by_name:
            return value.request_id
    return 0
