"""``tidelog-server CONFIG_FILE [--override key=value ...]``: run one broker.

Settings come from the file, then ``TIDELOG_CONFIG_<NAME>`` environment variables
(:mod:`tidelog.server.env_overrides`), then ``--override`` arguments; the later wins.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import os
import resource
import signal
import sys

from tidelog.controller.zk_brokers import BrokerIdTakenError
from tidelog.controller.zk_session import ZooKeeperStartStopped, ZooKeeperUnavailableError
from tidelog.server.config import BrokerConfig, ConfigError
from tidelog.server.env_overrides import load_config
from tidelog.server.idle_poll import new_event_loop

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
        help="override a property of the file and the environment (repeatable)",
    )
    return parser


async def _run(config: BrokerConfig) -> None:
    from tidelog.server.broker import Broker

    broker = Broker(config)
    # Handlers first: a SIGTERM during start-up (log recovery can be long) waits for the
    # start to finish and then shuts down cleanly instead of killing the process; one
    # while the start still waits for ZooKeeper ends that wait and the process.
    stop = asyncio.Event()

    def stop_asked() -> None:
        stop.set()
        broker.stop_starting()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop_asked)
    try:
        await broker.start()
    except ZooKeeperStartStopped as stopped:
        logging.getLogger("tidelog.server").info("%s", stopped)
        return
    await stop.wait()
    await broker.shutdown()


def _raise_open_files_limit() -> None:
    """Every segment holds a few descriptors: use the hard limit, as Kafka's scripts
    advise operators to."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="[%(asctime)s] %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("kazoo").setLevel(logging.WARNING)
    log = logging.getLogger("tidelog.server")
    try:
        config, from_environment = load_config(args.config, args.override, os.environ)
        if from_environment:  # keys only: values may be secrets
            log.info("config from the environment: %s", ", ".join(from_environment))
        for key in config.unknown:
            log.warning("unknown config %r ignored", key)
        _raise_open_files_limit()
        loop_factory = functools.partial(new_event_loop, config["socket.idle.poll.us"])
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            runner.run(_run(config))
    except (ConfigError, BrokerIdTakenError, ZooKeeperUnavailableError) as error:
        # ZooKeeper unavailable here means at start-up; later the client retries.
        print(f"tidelog-server: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
