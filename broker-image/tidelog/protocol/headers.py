"""Request and response headers (Kafka's ``RequestHeader.json`` / ``ResponseHeader.json``).

* RequestHeader v0: ``request_api_key``, ``request_api_version``, ``correlation_id``;
  v1 adds ``client_id`` (a nullable string, never compact, even in v2); v2 adds a
  tagged-fields section.
* ResponseHeader v0: ``correlation_id``; v1 adds a tagged-fields section.

Which version a message uses is decided by :func:`tidelog.protocol.api.request_header_version`
and :func:`~tidelog.protocol.api.response_header_version`.
"""

from __future__ import annotations

from ._compiler import Codec, compile_message
from ._schema import load_message
from ._structs import Struct, message_classes

__all__ = [
    "REQUEST_HEADER_CODECS",
    "RESPONSE_HEADER_CODECS",
    "RequestHeader",
    "ResponseHeader",
]

_REQUEST_SPEC = load_message("RequestHeader")
_RESPONSE_SPEC = load_message("ResponseHeader")

RequestHeader: type[Struct] = message_classes(_REQUEST_SPEC)["RequestHeader"]
ResponseHeader: type[Struct] = message_classes(_RESPONSE_SPEC)["ResponseHeader"]

# Shorter names for the two fields every caller reads.
RequestHeader.api_key = property(  # type: ignore[attr-defined]
    lambda self: self.request_api_key, doc="Alias of ``request_api_key``."
)
RequestHeader.api_version = property(  # type: ignore[attr-defined]
    lambda self: self.request_api_version, doc="Alias of ``request_api_version``."
)

REQUEST_HEADER_CODECS: tuple[Codec, ...] = tuple(
    compile_message(_REQUEST_SPEC, v) for v in _REQUEST_SPEC.valid_versions
)
RESPONSE_HEADER_CODECS: tuple[Codec, ...] = tuple(
    compile_message(_RESPONSE_SPEC, v) for v in _RESPONSE_SPEC.valid_versions
)
