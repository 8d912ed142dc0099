"""``tidelog-server CONFIG_FILE [--override key=value ...]``: run one broker."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from tidelog.controller.zk_client import BrokerIdTakenError
from tidelog.server.config import BrokerConfig, ConfigError

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tidelog-server", description="Run a tidelog broker (Kafka-compatible)."
    )
    parser.add_argument("config", help="server.properties file")
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a property of the file (repeatable)",
    )
    return parser


async def _run(config: BrokerConfig) -> None:
    from tidelog.server.broker import Broker

    broker = Broker(config)
    await broker.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await broker.shutdown()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="[%(asctime)s] %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("kazoo").setLevel(logging.WARNING)
    try:
        config = BrokerConfig.load(args.config, args.override)
        for key in config.unknown:
            logging.getLogger("tidelog.server").warning("unknown config %r ignored", key)
        asyncio.run(_run(config))
    except (ConfigError, BrokerIdTakenError) as error:
        print(f"tidelog-server: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
