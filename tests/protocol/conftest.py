from __future__ import annotations

from typing import Any

import pytest

from .reference import run_kafka_reference
from .samples import (
    VARIANTS,
    all_message_versions,
    header_spec,
    header_version,
    sample_body,
    sample_header,
    sample_id,
    to_kafka_json,
)


@pytest.fixture(scope="session")
def kafka_reference() -> dict[str, Any]:
    """Kafka's bytes for every sample message (by sample id), its built messages, error
    codes and API table, from one JVM run."""
    samples = []
    correlation_id = 1
    for api, version, kind in all_message_versions():
        spec = api.request if kind == "request" else api.response
        for variant in VARIANTS:
            correlation_id += 1
            header = sample_header(api.api_key, version, kind, correlation_id)
            body = sample_body(spec, version, variant)
            hv = header_version(api.api_key, version, kind)
            samples.append(
                {
                    "id": sample_id(api, version, kind, variant),
                    "message": spec.name,
                    "api_key": int(api.api_key),
                    "version": version,
                    "kind": kind,
                    "header": to_kafka_json(header, header_spec(kind), hv),
                    "body": to_kafka_json(body, spec, version),
                    "correlation_id": correlation_id,
                }
            )
    output = run_kafka_reference(samples)
    output["samples_by_id"] = {s["id"]: s for s in output["samples"]}
    output["inputs_by_id"] = {s["id"]: s for s in samples}
    return output
