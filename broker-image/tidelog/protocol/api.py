"""The API table and the framing-free entry points of the codec.

A frame is what follows Kafka's 4-byte size prefix: header + body. :func:`decode_request`
and :func:`decode_response` take a frame (``bytes``, ``bytearray`` or ``memoryview``) and
never copy records: a records field comes back as a ``memoryview`` slice of the frame, so
the frame must stay alive (and unchanged) as long as that field is used. The encoders
return the frame *without* the size prefix; :func:`encode_response_chunks` returns the
prefix and the frame as a list of pieces for ``writelines``, with records values passed
through as given (any object with a length: ``bytes``, ``memoryview``, ...).

Header versions follow Kafka: a request uses header v2 in the message's flexible versions
and v1 before (ControlledShutdown v0: header v0); a response uses header v1 in flexible
versions and v0 before, except ApiVersions responses, always v0 (so that a client can read
the error of an ApiVersions request whose version the broker does not know).

Decoding errors raise :class:`~tidelog.protocol.errors.RemoteProtocolError` subclasses,
carrying the error code to answer with and the header as far as it was parsed. Trailing
bytes after a body are ignored, as Kafka does.
"""

from __future__ import annotations

import enum
import functools
import struct
from dataclasses import dataclass
from typing import Any

from . import primitives as p
from ._compiler import Codec, compile_message
from ._schema import MessageSpec, Versions, load_messages
from ._structs import Struct, message_classes
from .errors import (
    ErrorCode,
    LocalProtocolError,
    MalformedMessageError,
    UnknownApiKeyError,
    UnsupportedVersionError,
)
from .headers import REQUEST_HEADER_CODECS, RESPONSE_HEADER_CODECS, RequestHeader, ResponseHeader

__all__ = [
    "OPERATIONS_NOT_REQUESTED",
    "ApiKey",
    "ApiSpec",
    "api_spec",
    "api_specs",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "encode_response_body",
    "encode_response_chunks",
    "frame_response_body",
    "request_class",
    "request_codec",
    "request_header_version",
    "response_class",
    "response_codec",
    "response_header_version",
]

# The value of an ``authorized_operations`` field (DescribeCluster, DescribeGroups, ...)
# when the request did not ask for them: Integer.MIN_VALUE.
OPERATIONS_NOT_REQUESTED = -(2**31)


class ApiKey(enum.IntEnum):
    """Kafka's API keys, named as Kafka's ``ApiKeys`` enum."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    LEADER_AND_ISR = 4
    STOP_REPLICA = 5
    UPDATE_METADATA = 6
    CONTROLLED_SHUTDOWN = 7
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    ALTER_REPLICA_LOG_DIRS = 34
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    CREATE_DELEGATION_TOKEN = 38
    RENEW_DELEGATION_TOKEN = 39
    EXPIRE_DELEGATION_TOKEN = 40
    DESCRIBE_DELEGATION_TOKEN = 41
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    VOTE = 52
    BEGIN_QUORUM_EPOCH = 53
    END_QUORUM_EPOCH = 54
    DESCRIBE_QUORUM = 55
    ALTER_PARTITION = 56
    UPDATE_FEATURES = 57
    ENVELOPE = 58
    FETCH_SNAPSHOT = 59
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    BROKER_REGISTRATION = 62
    BROKER_HEARTBEAT = 63
    UNREGISTER_BROKER = 64
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    ALLOCATE_PRODUCER_IDS = 67
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    CONTROLLER_REGISTRATION = 70
    GET_TELEMETRY_SUBSCRIPTIONS = 71
    PUSH_TELEMETRY = 72
    ASSIGN_REPLICAS_TO_DIRS = 73
    LIST_CLIENT_METRICS_RESOURCES = 74
    DESCRIBE_TOPIC_PARTITIONS = 75
    SHARE_GROUP_HEARTBEAT = 76
    SHARE_GROUP_DESCRIBE = 77
    SHARE_FETCH = 78
    SHARE_ACKNOWLEDGE = 79
    ADD_RAFT_VOTER = 80
    REMOVE_RAFT_VOTER = 81
    UPDATE_RAFT_VOTER = 82
    INITIALIZE_SHARE_GROUP_STATE = 83
    READ_SHARE_GROUP_STATE = 84
    WRITE_SHARE_GROUP_STATE = 85
    DELETE_SHARE_GROUP_STATE = 86
    READ_SHARE_GROUP_STATE_SUMMARY = 87


@dataclass(frozen=True)
class ApiSpec:
    """One API as the message definitions describe it.

    ``min_version``..``max_version`` is every version this codec can encode and decode
    (all of Kafka's ``validVersions``); which of them a broker advertises is its choice.
    ``listeners`` are Kafka's (``zkBroker``, ``broker``, ``controller``): the kinds of
    Kafka server that serve the API. ``latest_version_unstable`` marks an API whose newest
    version Kafka does not advertise by default.
    """

    api_key: ApiKey
    name: str  # e.g. "Fetch"
    min_version: int
    max_version: int
    flexible_versions: Versions
    listeners: tuple[str, ...]
    latest_version_unstable: bool
    request: MessageSpec
    response: MessageSpec

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


@functools.cache
def api_specs() -> dict[ApiKey, ApiSpec]:
    """Every API of the message definitions, by key."""
    messages = load_messages()
    specs = {}
    for request in messages.values():
        if request.kind != "request":
            continue
        name = request.name[: -len("Request")]
        response = messages[f"{name}Response"]
        if response.valid_versions != request.valid_versions:
            raise ValueError(f"{name}: request and response versions differ")
        key = ApiKey(request.api_key)
        specs[key] = ApiSpec(
            api_key=key,
            name=name,
            min_version=request.valid_versions.low,
            max_version=request.valid_versions.high,
            flexible_versions=request.flexible_versions,
            listeners=request.listeners,
            latest_version_unstable=request.latest_version_unstable,
            request=request,
            response=response,
        )
    return dict(sorted(specs.items()))


def api_spec(api_key: int) -> ApiSpec | None:
    return api_specs().get(api_key)


def request_header_version(api_key: int, api_version: int) -> int:
    """The request header version of a request (also for versions the API lacks)."""
    if api_key == ApiKey.CONTROLLED_SHUTDOWN and api_version == 0:
        return 0  # ControlledShutdown v0 has no client id
    spec = api_specs()[api_key]
    return 2 if api_version in spec.request.flexible_versions else 1


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == ApiKey.API_VERSIONS:
        return 0  # always v0 (KIP-511)
    spec = api_specs()[api_key]
    return 1 if api_version in spec.response.flexible_versions else 0


# api key, api version, correlation id: the start of every request header version.
_HEADER_START = struct.Struct(">hhi")

_request_codecs: dict[tuple[int, int], Codec] = {}
_response_codecs: dict[tuple[int, int], Codec] = {}
_lenient_response_codecs: dict[tuple[int, int], Codec] = {}


def _codec(
    cache: dict, api_key: int, api_version: int, request: bool, strict: bool = True
) -> Codec:
    codec = cache.get((api_key, api_version))
    if codec is None:
        spec = api_spec(api_key)
        if spec is None or not spec.supports(api_version):
            raise LocalProtocolError(
                f"api key {api_key} version {api_version} is not supported",
                error_code=ErrorCode.UNSUPPORTED_VERSION,
            )
        message = spec.request if request else spec.response
        codec = compile_message(message, api_version, strict)
        cache[api_key, api_version] = codec
    return codec


def request_codec(api_key: int, api_version: int) -> Codec:
    """The compiled request body codec (compiled on first use)."""
    return _codec(_request_codecs, api_key, api_version, True)


def response_codec(api_key: int, api_version: int, *, strict: bool = True) -> Codec:
    """The compiled response body codec (compiled on first use). A non-strict codec
    leaves out fields the version lacks instead of refusing them."""
    if not strict:
        return _codec(_lenient_response_codecs, api_key, api_version, False, strict=False)
    return _codec(_response_codecs, api_key, api_version, False)


def request_class(api_key: int) -> type[Struct]:
    """The class of an API's request bodies (e.g. ``FetchRequest``), nested structs as
    its attributes."""
    request = api_specs()[ApiKey(api_key)].request
    return message_classes(request)[request.name]


def response_class(api_key: int) -> type[Struct]:
    response = api_specs()[ApiKey(api_key)].response
    return message_classes(response)[response.name]


# --------------------------------------------------------------------------------------
# Server side


def _partial_request_header(buf: memoryview) -> Any:
    """As much of a request header as the fixed part of the frame holds."""
    n = len(buf)
    return RequestHeader(
        request_api_key=p.INT16.unpack_from(buf, 0)[0] if n >= 2 else None,
        request_api_version=p.INT16.unpack_from(buf, 2)[0] if n >= 4 else None,
        correlation_id=p.INT32.unpack_from(buf, 4)[0] if n >= 8 else None,
        client_id=None,
    )


def decode_request(frame: bytes | bytearray | memoryview) -> tuple[Any, Any]:
    """``(header, body)`` of a request frame (without its size prefix).

    Raises :class:`UnknownApiKeyError`, :class:`UnsupportedVersionError` or
    :class:`MalformedMessageError`, each with the header as far as it could be parsed.
    """
    buf = frame if type(frame) is memoryview else memoryview(frame)
    if len(buf) < 8:
        partial = _partial_request_header(buf)
        raise MalformedMessageError(
            f"request frame of {len(buf)} bytes is shorter than a request header",
            header=partial,
            api_key=partial.request_api_key,
            api_version=partial.request_api_version,
        )
    api_key, api_version, correlation_id = _HEADER_START.unpack_from(buf, 0)
    spec = api_specs().get(api_key)
    if spec is None:
        raise UnknownApiKeyError(
            f"unknown api key {api_key}",
            header=_partial_request_header(buf),
            api_key=api_key,
            api_version=api_version,
            correlation_id=correlation_id,
        )
    header_codec = REQUEST_HEADER_CODECS[request_header_version(api_key, api_version)]
    try:
        header, pos = header_codec.read(buf, 0)
    except p.DECODE_ERRORS as e:
        header, pos = _partial_request_header(buf), None
        header_error = e
    if not spec.supports(api_version):
        raise UnsupportedVersionError(
            f"{spec.name} version {api_version} is not supported "
            f"(versions {spec.min_version}-{spec.max_version})",
            header=header,
            api_key=api_key,
            api_version=api_version,
            correlation_id=correlation_id,
        )
    if pos is None:
        raise MalformedMessageError(
            f"{spec.name} v{api_version}: malformed request header: {header_error}",
            header=header,
            api_key=api_key,
            api_version=api_version,
            correlation_id=correlation_id,
        ) from header_error
    codec = request_codec(api_key, api_version)
    try:
        body, _ = codec.read(buf, pos)
    except p.DECODE_ERRORS as e:
        raise MalformedMessageError(
            f"{spec.name}Request v{api_version}: malformed body: {e}",
            header=header,
            api_key=api_key,
            api_version=api_version,
            correlation_id=correlation_id,
        ) from e
    return header, body


_ENCODE_ERRORS = (TypeError, ValueError, AttributeError, OverflowError, KeyError)


def _encode(parts: list, codec: Codec, value: Any, what: str) -> None:
    try:
        codec.write(parts, value)
    except LocalProtocolError as e:
        raise LocalProtocolError(f"{what}: {e}", error_code=e.error_code) from e
    except _ENCODE_ERRORS as e:
        raise LocalProtocolError(f"{what}: {type(e).__name__}: {e}") from e


def _response_parts(
    header: Any, api_key: int, api_version: int, body: Any, strict: bool = True
) -> list:
    parts = _response_header_parts(header, api_key, api_version)
    parts += encode_response_body(api_key, api_version, body, strict=strict)
    return parts


def _response_header_parts(header: Any, api_key: int, api_version: int) -> list:
    if isinstance(header, int):
        header = ResponseHeader(correlation_id=header)
    elif not isinstance(header, ResponseHeader):
        header = ResponseHeader(correlation_id=header.correlation_id)
    parts: list = []
    header_codec = RESPONSE_HEADER_CODECS[response_header_version(api_key, api_version)]
    _encode(parts, header_codec, header, "ResponseHeader")
    return parts


def encode_response_body(api_key: int, api_version: int, body: Any, *, strict: bool = True) -> list:
    """A response body as pieces, without header and size prefix: encoded once for a
    body that answers several requests, each framed with :func:`frame_response_body`."""
    codec = response_codec(api_key, api_version, strict=strict)
    parts: list = []
    _encode(parts, codec, body, f"{codec.name} v{api_version}")
    return parts


def frame_response_body(header: Any, api_key: int, api_version: int, body_parts: list) -> list:
    """:func:`encode_response_chunks` of a body :func:`encode_response_body` encoded."""
    parts = _response_header_parts(header, api_key, api_version)
    parts += body_parts
    parts.insert(0, p.INT32.pack(sum(map(len, parts))))
    return parts


def encode_response(header: Any, api_key: int, api_version: int, body: Any) -> bytes:
    """The response frame, without the 4-byte size prefix.

    ``header`` is a :class:`ResponseHeader`, the request's :class:`RequestHeader` or a
    correlation id. ``body`` is a response object (or a dict of its fields)."""
    return b"".join(_response_parts(header, api_key, api_version, body))


def encode_response_chunks(
    header: Any, api_key: int, api_version: int, body: Any, *, strict: bool = True
) -> list:
    """The size prefix and the response frame as pieces to write in order; records values
    are passed through uncopied, so the pieces may be ``memoryview`` or other objects.
    ``strict=False`` leaves out fields ``api_version`` lacks (see ``response_codec``)."""
    body_parts = encode_response_body(api_key, api_version, body, strict=strict)
    return frame_response_body(header, api_key, api_version, body_parts)


# --------------------------------------------------------------------------------------
# Client side


def encode_request(header: Any, body: Any) -> bytes:
    """The request frame for ``header`` (a :class:`RequestHeader`, whose api key and
    version select the body's schema), without the 4-byte size prefix."""
    if isinstance(header, dict):
        header = RequestHeader.from_dict(header)
    api_key, api_version = header.request_api_key, header.request_api_version
    codec = request_codec(api_key, api_version)
    parts: list = []
    header_codec = REQUEST_HEADER_CODECS[request_header_version(api_key, api_version)]
    _encode(parts, header_codec, header, "RequestHeader")
    _encode(parts, codec, body, f"{codec.name} v{api_version}")
    return b"".join(parts)


def decode_response(
    frame: bytes | bytearray | memoryview, api_key: int, api_version: int
) -> tuple[Any, Any]:
    """``(header, body)`` of a response frame to a request of ``api_key``/``api_version``.

    Raises :class:`MalformedMessageError` (with the correlation id when it was read)."""
    codec = response_codec(api_key, api_version)
    buf = frame if type(frame) is memoryview else memoryview(frame)
    header_codec = RESPONSE_HEADER_CODECS[response_header_version(api_key, api_version)]
    correlation_id = p.INT32.unpack_from(buf, 0)[0] if len(buf) >= 4 else None
    header = None
    try:
        header, pos = header_codec.read(buf, 0)
        body, _ = codec.read(buf, pos)
    except p.DECODE_ERRORS as e:
        raise MalformedMessageError(
            f"{codec.name} v{api_version}: malformed response: {e}",
            header=header or ResponseHeader(correlation_id=correlation_id),
            api_key=api_key,
            api_version=api_version,
            correlation_id=correlation_id,
        ) from e
    return header, body
