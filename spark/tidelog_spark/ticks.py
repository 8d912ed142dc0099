"""The tick generator: trades of a few symbols, keyed by symbol, to topic ``ticks``.

Each tick is one record: key the symbol, value JSON
``{"symbol": "ACME", "price": 101.25, "size": 300, "time": 1764000000123}`` (``time``:
the event time, epoch milliseconds, also the record's timestamp). Prices walk randomly
from 100 in steps of at most ``MAX_STEP``, rounded to cents; sizes are round lots. The
same ``--seed`` gives the same ticks, so a test can compute the expected bars itself.

    tidelog-ticks --bootstrap-server HOST:PORT [--topic ticks] [--rate R] [--count N]
                  [--start EPOCH_MS --spacing-ms MS] [--seed S] [--symbols A,B,...]

``--rate`` paces the ticks (R a second; 0: as fast as the producer goes); ``--count``
stops after N (default: until Ctrl-C). Event times are the wall clock, or with
``--start`` synthetic: the first tick at ``--start``, each next one ``--spacing-ms``
later (a known stream for tests, whatever the pace). The producer is idempotent with
acks=all: a tick acknowledged is written once.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass

SYMBOLS = ("ACME", "BOLT", "CRUX", "DYNA", "EPIC")
START_PRICE = 100.0
MAX_STEP = 0.004  # a tick moves its symbol's price by at most 0.4 %


@dataclass(frozen=True)
class Tick:
    symbol: str
    price: float
    size: int
    time: int  # epoch milliseconds

    def record(self) -> tuple[bytes, bytes]:
        """The record's key and value."""
        return self.symbol.encode(), json.dumps(asdict(self), separators=(",", ":")).encode()


def tick_stream(
    clock: Callable[[int], int], *, seed: int = 0, symbols: tuple[str, ...] = SYMBOLS
) -> Iterator[Tick]:
    """Endless ticks; ``clock(n)`` is the event time of the n-th (from 0)."""
    rng = random.Random(seed)
    prices = dict.fromkeys(symbols, START_PRICE)
    for n in range(sys.maxsize):
        symbol = rng.choice(symbols)
        prices[symbol] = round(prices[symbol] * (1 + rng.uniform(-MAX_STEP, MAX_STEP)), 2)
        yield Tick(symbol, prices[symbol], 100 * rng.randint(1, 10), clock(n))


def synthetic_clock(start_ms: int, spacing_ms: int) -> Callable[[int], int]:
    return lambda n: start_ms + n * spacing_ms


def wall_clock(_: int) -> int:
    return time.time_ns() // 1_000_000


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tidelog-ticks", description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,...]")
    parser.add_argument("--topic", default="ticks")
    parser.add_argument("--rate", type=float, default=20.0, help="ticks a second (0: no pacing)")
    parser.add_argument("--count", type=int, help="stop after N ticks (default: run until stopped)")
    parser.add_argument("--start", type=int, metavar="EPOCH_MS", help="synthetic event times")
    parser.add_argument("--spacing-ms", type=int, default=250)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--symbols", default=",".join(SYMBOLS))
    return parser


def _check(args: argparse.Namespace) -> str | None:
    if args.rate < 0:
        return "--rate must be 0 or more"
    if args.count is not None and args.count < 1:
        return "--count must be at least 1"
    if args.spacing_ms < 1:
        return "--spacing-ms must be at least 1"
    if not all(args.symbols.split(",")):
        return "--symbols needs non-empty names, separated by commas"
    return None


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    problem = _check(args)
    if problem:
        print(f"tidelog-ticks: {problem}", file=sys.stderr)
        return 2
    from kafka import KafkaProducer  # the Spark image's jobs never need it

    clock = wall_clock if args.start is None else synthetic_clock(args.start, args.spacing_ms)
    ticks = tick_stream(clock, seed=args.seed, symbols=tuple(args.symbols.split(",")))
    producer = KafkaProducer(
        bootstrap_servers=args.bootstrap_server, acks="all", enable_idempotence=True, linger_ms=5
    )
    stopping: list[bool] = []
    failures: list[Exception] = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    sent = 0
    began = time.monotonic()
    try:
        for tick in ticks:
            if stopping or (args.count is not None and sent >= args.count):
                break
            if args.rate:
                time.sleep(max(0.0, began + sent / args.rate - time.monotonic()))
            key, value = tick.record()
            sent_future = producer.send(args.topic, value, key=key, timestamp_ms=tick.time)
            sent_future.add_errback(failures.append)
            sent += 1
    except KeyboardInterrupt:
        pass
    finally:
        producer.flush()
        producer.close()
    if failures:
        failed = f"{len(failures)} of {sent} ticks failed: {failures[0]}"
        print(f"tidelog-ticks: {failed}", file=sys.stderr)
        return 1
    print(f"tidelog-ticks: {sent} ticks to {args.topic}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
