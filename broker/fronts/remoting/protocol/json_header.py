"""The JSON remoting header (serialize type 0) in the shape fastjson gives it.

Java's ``RemotingSerializable`` writes the header with fastjson: top-level keys in
alphabetical order (``code, extFields, flag, language, opaque, remark,
serializeTypeCurrentRPC, version``), null ``remark`` / ``extFields`` left out, language
as the enum *name*, every extFields value a string, no spaces. ``extFields`` is a
HashMap on the Java side, so its own key order means nothing; we keep insertion order.

Decoding is lenient where real clients are sloppy and strict where garbage would leak
into the broker: ali-ons sends extFields values as JSON numbers and booleans, so they
become strings ("0", "true"); ``language`` may be a name or an int; the four int fields
are integers within int32, as JSON numbers or, as fastjson takes them, digits in a
string (``code`` is required, the others default to 0, as fastjson leaves Java's
primitive ints at 0); a String field given a number, boolean or object takes its text.
Text is UTF-8; malformed sequences become U+FFFD, as Java's ``new String(bytes, UTF_8)``
does.

Cost: one C-accelerated ``json`` call each way plus a pass over extFields to check value
types, so O(header bytes); a SEND_MESSAGE_V2 header takes a few microseconds.
"""
from __future__ import annotations

import json

from .codes import LanguageCode
from .command import RemotingCommand
from .errors import LocalProtocolError, ProtocolError
from ....java_fields import FieldError, java_int, java_string

__all__ = ["encode_json_header", "decode_json_header", "ext_fields_out", "LANGUAGE_NAMES"]

_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1
# code -> name, for ints on the wire and LanguageCode members in commands
LANGUAGE_NAMES: dict[int, str] = {m.value: m.name for m in LanguageCode}
_KNOWN_NAMES = frozenset(LANGUAGE_NAMES.values())

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_decoder = json.JSONDecoder()
_loads = _decoder.decode
_raw_decode = _decoder.raw_decode
_quote = json.encoder.encode_basestring     # the C string encoder where there is one


def _load_object(text: str):
    """``json.loads`` for the usual header (an object from its first byte to its last):
    one C scan without the two whitespace passes ``decode`` adds; anything else goes
    the general way, so errors and edge cases are exactly ``json.loads``'s."""
    if text[:1] == "{" and text[-1:] == "}":
        try:
            obj, end = _raw_decode(text)
        except ValueError:
            obj, end = None, -1
        if end == len(text):
            return obj
    return _loads(text)


def _object_of_strings(ext: dict) -> str:
    """A JSON object of str keys and str values (what extFields is on the wire)."""
    return "{" + ",".join([_quote(k) + ":" + _quote(v) for k, v in ext.items()]) + "}"


def _reusable_c_encoder():
    """CPython's C object encoder, made once (``JSONEncoder.encode`` builds a new one on
    every call, a third of its cost for a header). No circular-reference markers: it
    only ever sees a flat dict of strings. None where ``_json`` is missing or differs."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return None
    try:
        encoder = make(None, None, _quote, None, ":", ",", False, False, False)
        sample = {"a": "x\u0001y\u0002\"\\é", "b": ""}
        if "".join(encoder(sample, 0)) != _dumps(sample):
            return None
    except Exception:   # a different private signature: use the portable path
        return None
    return lambda ext: "".join(encoder(ext, 0))


_strings_object = _reusable_c_encoder() or _object_of_strings
_TEMPLATE = ('{"code":%d%s,"flag":%d,"language":%s,"opaque":%d%s,'
             '"serializeTypeCurrentRPC":"JSON","version":%d}')


# -- encode ------------------------------------------------------------------------
def encode_json_header(cmd: RemotingCommand) -> bytes:
    """The header bytes of ``cmd`` as fastjson would write them. O(header size).

    Raises LocalProtocolError for non-int or out-of-int32 code/opaque/flag/version, a
    non-string remark, or extFields that is not a dict with string keys. Non-string
    extFields values are stringified the way Java's makeCustomHeaderToNet does; None
    values are dropped. Unencodable text (lone surrogates) becomes '?', as in Java."""
    code, opaque, flag, version = cmd.code, cmd.opaque, cmd.flag, cmd.version
    if not (type(code) is int and type(opaque) is int and type(flag) is int and type(version) is int
            and _I32_MIN <= code <= _I32_MAX and _I32_MIN <= opaque <= _I32_MAX
            and _I32_MIN <= flag <= _I32_MAX and _I32_MIN <= version <= _I32_MAX):
        code, opaque, flag, version = (_local_i32(n, getattr(cmd, n)) for n in ("code", "opaque", "flag", "version"))
    lang = cmd.language
    lang = '"' + lang + '"' if lang.__class__ is str and lang in _KNOWN_NAMES else _language_out(lang)
    remark = cmd.remark
    if remark is None:
        remark_part = ""
    elif remark.__class__ is str:
        remark_part = ',"remark":' + _dumps(remark)
    else:
        raise LocalProtocolError(f"remark must be a str or None, not {type(remark).__name__}")
    ext = cmd.ext_fields
    if ext is None:
        ext_part = ""
    else:
        if ext.__class__ is not dict:
            ext = _ext_out(ext)
        else:
            for k, v in ext.items():
                if v.__class__ is not str or k.__class__ is not str:
                    ext = _ext_out(ext)
                    break
        ext_part = ',"extFields":' + _strings_object(ext)
    text = _TEMPLATE % (code, ext_part, flag, lang, opaque, remark_part, version)
    return text.encode("utf-8", "replace")


def _local_i32(name: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise LocalProtocolError(f"{name} must be an int, not {type(v).__name__}")
    if not _I32_MIN <= v <= _I32_MAX:
        raise LocalProtocolError(f"{name} {v} does not fit in an int32")
    return int(v)


def _language_out(lang) -> str:
    if isinstance(lang, int) and not isinstance(lang, bool):
        name = LANGUAGE_NAMES.get(int(lang))
        if name is None:
            raise LocalProtocolError(f"unknown language code {lang}")
        return '"' + name + '"'
    if isinstance(lang, str):
        return _dumps(str(lang))
    raise LocalProtocolError(f"language must be a name or a LanguageCode, not {type(lang).__name__}")


def ext_fields_out(ext) -> dict[str, str]:
    """extFields as the wire wants them: str keys, str values, None values dropped,
    booleans as 'true'/'false'. Raises LocalProtocolError on a non-dict or non-str key."""
    if not isinstance(ext, dict):
        raise LocalProtocolError(f"ext_fields must be a dict or None, not {type(ext).__name__}")
    out = {}
    for k, v in ext.items():
        if not isinstance(k, str):
            raise LocalProtocolError(f"ext_fields key {k!r} is not a str")
        if v is None:
            continue
        if v is True or v is False:
            out[str(k)] = "true" if v else "false"
        else:
            out[str(k)] = str(v)
    return out


_ext_out = ext_fields_out


# -- decode ------------------------------------------------------------------------
def decode_json_header(header: bytes, body: bytes = b"") -> RemotingCommand:
    """The command a JSON header describes, carrying ``body``. O(header size).

    Raises ProtocolError when the text is not JSON, not an object, lacks an int code,
    or has fields of impossible types."""
    try:
        obj = _load_object(header.decode("utf-8", "replace"))
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(f"undecodable JSON header: {exc}") from None
    if obj.__class__ is not dict:
        raise ProtocolError(f"JSON header is not an object but {type(obj).__name__}")
    get = obj.get
    code, opaque, flag, version = get("code"), get("opaque", 0), get("flag", 0), get("version", 0)
    if not (code.__class__ is int and opaque.__class__ is int and flag.__class__ is int
            and version.__class__ is int and _I32_MIN <= code <= _I32_MAX and _I32_MIN <= opaque <= _I32_MAX
            and _I32_MIN <= flag <= _I32_MAX and _I32_MIN <= version <= _I32_MAX):
        if code is None:
            raise ProtocolError("JSON header has no code")
        code, opaque, flag, version = (_remote_i32(n, get(n)) for n in ("code", "opaque", "flag", "version"))
    lang = get("language")
    if lang.__class__ is not str:
        lang = _language_in(lang)
    remark = get("remark")
    if remark is not None and remark.__class__ is not str:
        remark = _scalar_in("remark", remark)
    ext = get("extFields")
    if ext is not None:
        if ext.__class__ is not dict:
            raise ProtocolError(f"extFields is not an object but {type(ext).__name__}")
        for v in ext.values():
            if v.__class__ is not str:
                ext = _ext_in(ext)
                break
    return RemotingCommand(code=code, ext_fields=ext, body=body, opaque=opaque, flag=flag, remark=remark,
                           language=lang, version=version, serialize_type=0)


def _remote_i32(name: str, v) -> int:
    """An int field of RemotingCommand, as fastjson reads it (digits in a string too)."""
    if v is None and name != "code":
        return 0
    try:
        number = java_int(v, name, None, bits=64)     # the int32 range is said below
    except FieldError:
        number = None
    if number is None:
        raise ProtocolError(f"JSON header field {name} is not an integer: {v!r:.60}")
    if not _I32_MIN <= number <= _I32_MAX:
        raise ProtocolError(f"JSON header field {name} {v} does not fit in an int32")
    return number


def _language_in(lang) -> str:
    if lang is None:
        return "JAVA"  # Java's RemotingCommand default
    if lang.__class__ is int:
        return LANGUAGE_NAMES.get(lang, "OTHER")
    raise ProtocolError(f"JSON header field language is neither a name nor a code: {lang!r:.60}")


def _scalar_in(name: str, v) -> str:
    """A String field given another JSON value: its text, as fastjson reads it."""
    if v is True or v is False:
        return "true" if v else "false"
    if v.__class__ in (int, float):
        return str(v)
    try:
        return java_string(v, name)
    except (FieldError, ValueError, RecursionError):
        raise ProtocolError(f"JSON header field {name} is not a string: {v!r:.60}") from None


def _ext_in(ext: dict) -> dict[str, str]:
    out = {}
    for k, v in ext.items():
        if v is None:
            continue
        if v.__class__ is str:
            out[k] = v
        elif v.__class__ in (dict, list):
            try:
                out[k] = _dumps(v)  # what fastjson's toString of a nested JSON value gives
            except (ValueError, RecursionError):
                raise ProtocolError(f"extFields.{k} is nested too deeply") from None
        else:
            out[k] = _scalar_in(f"extFields.{k}", v)
    return out
