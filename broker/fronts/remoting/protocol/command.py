"""RemotingCommand: the one request/response object of the 4.x remoting protocol.

The broker core takes and returns these; the in-process client transport passes them
straight through and the TCP adapter turns them into frames (``codec``). ``ext_fields``
holds strings, as on the wire; ``header_int`` and friends parse them.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

from .codes import ResponseCode, SerializeType
from .errors import RequestRefused

__all__ = ["RemotingCommand", "RPC_TYPE_RESPONSE", "RPC_ONEWAY", "HeaderError", "CURRENT_VERSION"]

RPC_TYPE_RESPONSE = 0x1
RPC_ONEWAY = 0x2
# Version.V4_9_8.ordinal(): what a current 4.x Java client sends.
CURRENT_VERSION = 409

_opaque = itertools.count(1)


class HeaderError(RequestRefused):
    """A required header field is missing or not of its type (the peer's fault)."""


@dataclass(slots=True)
class RemotingCommand:
    code: int
    ext_fields: dict[str, str] | None = None
    body: bytes = b""
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    language: str = "PYTHON"
    version: int = CURRENT_VERSION
    serialize_type: int = SerializeType.JSON

    # -- construction ----------------------------------------------------------
    @classmethod
    def request(cls, code: int, ext_fields: dict | None = None, body: bytes = b"", *,
                oneway: bool = False, version: int = CURRENT_VERSION) -> "RemotingCommand":
        """A request with a fresh opaque; non-string header values are stringified the
        way Java's makeCustomHeaderToNet does (booleans as 'true'/'false'), None dropped."""
        # positional, in field order (code, ext_fields, body, opaque, flag, remark,
        # language, version): every request is built here, and keywords cost more
        return cls(int(code), stringify(ext_fields) if ext_fields else None, body, next(_opaque),
                   RPC_ONEWAY if oneway else 0, None, "PYTHON", version)

    def response(self, code: int = ResponseCode.SUCCESS, remark: str | None = None,
                 ext_fields: dict | None = None, body: bytes = b"") -> "RemotingCommand":
        """The response to this request: same opaque, same serialize type, flag 1."""
        # positional, in field order (see ``request``)
        return RemotingCommand(int(code), stringify(ext_fields) if ext_fields else None, body, self.opaque,
                               RPC_TYPE_RESPONSE, remark, "JAVA", self.version, self.serialize_type)

    # -- flags -----------------------------------------------------------------
    @property
    def is_response(self) -> bool:
        return bool(self.flag & RPC_TYPE_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & RPC_ONEWAY)

    # -- header access -----------------------------------------------------------
    def header(self, name: str, default: str | None = None) -> str | None:
        ext = self.ext_fields
        if ext is None:
            return default
        v = ext.get(name)
        return default if v is None else str(v)

    def header_str(self, name: str) -> str:
        v = self.header(name)
        if v is None:
            raise HeaderError(f"the custom field <{name}> is null")
        return v

    def header_int(self, name: str, default: int | None = None) -> int:
        ext = self.ext_fields
        v = None if ext is None else ext.get(name)
        if v.__class__ is int:
            return v
        if v is None or v == "":
            if default is None:
                raise HeaderError(f"the custom field <{name}> is null")
            return default
        if isinstance(v, bool):
            return int(v)
        try:
            return int(v)
        except (TypeError, ValueError):
            raise HeaderError(f"the custom field <{name}> is not an integer: {v!r}") from None

    def header_bool(self, name: str, default: bool = False) -> bool:
        ext = self.ext_fields
        v = None if ext is None else ext.get(name)
        if v is None:
            return default
        if isinstance(v, bool):
            return v
        return str(v).lower() == "true"

    def __repr__(self) -> str:
        kind = "response" if self.is_response else ("oneway" if self.is_oneway else "request")
        return (f"RemotingCommand({kind} code={self.code} opaque={self.opaque} remark={self.remark!r} "
                f"ext={self.ext_fields} body={len(self.body)}B)")


def stringify(fields: dict) -> dict[str, str]:
    out = {}
    for k, v in fields.items():
        cls = v.__class__
        if cls is str:              # most values: taken as they are
            out[k] = v
        elif cls is int:
            out[k] = str(v)
        elif v is None:
            continue
        elif cls is bool:
            out[k] = "true" if v else "false"
        else:
            out[k] = str(v)
    return out
