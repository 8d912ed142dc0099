"""ApiVersions: which APIs, and which versions of each, this broker serves."""

from __future__ import annotations

from tidelog.protocol import ApiKey, api_specs, response_class
from tidelog.protocol.errors import ErrorCode

__all__ = ["handle_api_versions", "unsupported_version_response", "version_ranges"]

ApiVersionsResponse = response_class(ApiKey.API_VERSIONS)


def version_ranges(implemented) -> list:
    """The advertised range of each implemented API: every version the codec knows,
    which for Produce, Fetch, ListOffsets, FindCoordinator, InitProducerId and
    ApiVersions starts at 0 (librdkafka enables features only on seeing those)."""
    specs = api_specs()
    return [
        ApiVersionsResponse.ApiVersion(
            api_key=int(key),
            min_version=specs[key].min_version,
            max_version=specs[key].max_version,
        )
        for key in sorted(implemented)
    ]


async def handle_api_versions(broker, header, request, context):
    return ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=broker.advertised_versions)


def unsupported_version_response(broker):
    """The v0 body a client gets for an ApiVersions version we do not know: error 35
    and our ranges, so it can retry with a version we do."""
    return ApiVersionsResponse(
        error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=broker.advertised_versions
    )
