"""Times tidelog.protocol on the two messages of the hot paths, in µs per message.

* Produce request v9: one topic, one partition, 1 MiB of records.
* Fetch response v12: one topic, 10 partitions of 64 KiB of records each.

Decoding never copies records (they come back as memoryview slices of the frame);
``encode_*`` returns one ``bytes`` (one copy of the records, by the join);
``encode_response_chunks`` hands the records object through uncopied.

Usage: ``.venv/bin/python tools/protocol/bench_codec.py [--seconds S]``
"""

from __future__ import annotations

import argparse
import os
import timeit

from tidelog.protocol import (
    ApiKey,
    RequestHeader,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    encode_response_chunks,
    request_class,
    response_class,
)


def produce_request() -> tuple[RequestHeader, object]:
    Produce = request_class(ApiKey.PRODUCE)
    body = Produce(
        transactional_id=None,
        acks=-1,
        timeout_ms=30_000,
        topic_data=[
            Produce.TopicProduceData(
                name="bench",
                partition_data=[Produce.PartitionProduceData(index=0, records=os.urandom(1 << 20))],
            )
        ],
    )
    header = RequestHeader(
        request_api_key=ApiKey.PRODUCE, request_api_version=9, correlation_id=1, client_id="b"
    )
    return header, body


def fetch_response() -> object:
    Fetch = response_class(ApiKey.FETCH)
    partitions = [
        Fetch.PartitionData(
            partition_index=i,
            high_watermark=1_000_000 + i,
            last_stable_offset=1_000_000 + i,
            log_start_offset=0,
            aborted_transactions=None,
            records=memoryview(os.urandom(64 << 10)),
        )
        for i in range(10)
    ]
    return Fetch(
        session_id=7,
        responses=[Fetch.FetchableTopicResponse(topic="bench", partitions=partitions)],
    )


def _time(label: str, fn, seconds: float) -> None:
    timer = timeit.Timer(fn)
    number, elapsed = timer.autorange()
    repeat = max(3, int(seconds / max(elapsed, 1e-9)))
    best = min(timer.repeat(repeat=repeat, number=number)) / number
    print(f"{label:<52} {best * 1e6:10.1f} µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args()

    header, produce = produce_request()
    frame = encode_request(header, produce)
    _time(
        "Produce v9 request, 1 MiB: encode_request",
        lambda: encode_request(header, produce),
        args.seconds,
    )
    _time("Produce v9 request, 1 MiB: decode_request", lambda: decode_request(frame), args.seconds)

    fetch = fetch_response()
    frame = encode_response(1, ApiKey.FETCH, 12, fetch)
    _time(
        "Fetch v12 response, 10 x 64 KiB: encode_response",
        lambda: encode_response(1, ApiKey.FETCH, 12, fetch),
        args.seconds,
    )
    _time(
        "Fetch v12 response, 10 x 64 KiB: encode_response_chunks",
        lambda: encode_response_chunks(1, ApiKey.FETCH, 12, fetch),
        args.seconds,
    )
    _time(
        "Fetch v12 response, 10 x 64 KiB: decode_response",
        lambda: decode_response(frame, ApiKey.FETCH, 12),
        args.seconds,
    )


if __name__ == "__main__":
    main()
