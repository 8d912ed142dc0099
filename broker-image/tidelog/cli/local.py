"""``tidelog-local start``: a local cluster on 127.0.0.1 — ZooKeeper, N brokers, a demo
topic — in the foreground.

``make run`` runs it. Data lives under ``--dir`` and survives restarts. Once every broker
answers, ``<dir>/cluster.json`` describes the cluster for scripts and tests: the
bootstrap address, the ZooKeeper connect string and, per broker, its id, port, pid,
config file and log dirs. Ctrl-C or SIGTERM stops the brokers cleanly (SIGTERM each,
last started first), then ZooKeeper, and removes ``cluster.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from pathlib import Path

from tidelog.admin import AdminClient
from tidelog.server.process import BrokerProcess
from tidelog.zookeeper import ZooKeeperError, ZooKeeperServer

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tidelog-local", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("start", help="run ZooKeeper and the brokers until stopped")
    start.add_argument("--brokers", type=int, default=3, help="number of brokers (default 3)")
    start.add_argument(
        "--dir",
        type=Path,
        default=Path(".run"),
        help="where ZooKeeper and the brokers keep their data (default .run)",
    )
    start.add_argument("--zk-port", type=int, default=2181, help="ZooKeeper's port (2181)")
    start.add_argument(
        "--base-port", type=int, default=9092, help="broker N listens on base-port + N - 1"
    )
    start.add_argument(
        "--log-dirs-per-broker", type=int, default=2, help="log dirs of each broker (default 2)"
    )
    start.add_argument("--topic", default="demo", help="demo topic to create (default demo)")
    start.add_argument("--partitions", type=int, default=6, help="its partitions (default 6)")
    start.add_argument(
        "--replication-factor",
        type=int,
        help="its replication factor (default: 3, or the number of brokers when fewer)",
    )
    return parser


def _check(args: argparse.Namespace) -> str | None:
    """The first problem with the arguments, as one line, or None."""
    if args.replication_factor is None:
        args.replication_factor = min(3, args.brokers)
    if args.brokers < 1:
        return "--brokers must be at least 1"
    if args.log_dirs_per_broker < 1:
        return "--log-dirs-per-broker must be at least 1"
    if not 1 <= args.replication_factor <= args.brokers:
        return f"--replication-factor must be between 1 and --brokers ({args.brokers})"
    if args.partitions < 1:
        return "--partitions must be at least 1"
    return None


def cluster_description(zookeeper: ZooKeeperServer, brokers: list[BrokerProcess]) -> dict:
    return {
        "bootstrap": ",".join(b.bootstrap for b in brokers),
        "zookeeper": zookeeper.connect_string,
        "brokers": [
            {
                "id": b.broker_id,
                "port": b.port,
                "pid": b.process.pid,
                "config": str(b.config_path),
                "log_dirs": [str(d) for d in b.log_dirs],
            }
            for b in brokers
        ],
    }


def _write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".tmp")
    partial.write_text(text)
    os.replace(partial, path)


def start(args: argparse.Namespace) -> int:
    base = args.dir.resolve()
    description = base / "cluster.json"
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    zookeeper = ZooKeeperServer(base / "zookeeper", port=args.zk_port)
    brokers: list[BrokerProcess] = []
    try:
        zookeeper.start()
        print(f"zookeeper   {zookeeper.connect_string}  (log: {zookeeper.log_path})", flush=True)
        for index in range(args.brokers):
            broker = BrokerProcess(
                base / f"broker-{index + 1}",
                zookeeper.connect_string,
                broker_id=index + 1,
                port=args.base_port + index,
                log_dirs=args.log_dirs_per_broker,
            )
            brokers.append(broker.start())
            print(f"broker {index + 1}    {broker.bootstrap}  (log: {broker.log_path})", flush=True)
        cluster = cluster_description(zookeeper, brokers)
        AdminClient(cluster["bootstrap"]).create_topic(
            args.topic, args.partitions, args.replication_factor, exist_ok=True
        )
        print(
            f"topic       {args.topic} ({args.partitions} partitions, "
            f"replication factor {args.replication_factor})"
        )
        _write_atomically(description, json.dumps(cluster, indent=2) + "\n")
        print(f"\nbootstrap servers: {cluster['bootstrap']}  (described in {description})")
        print(
            "try: kafka-console-producer --bootstrap-server "
            f"{brokers[0].bootstrap} --topic {args.topic}"
        )
        print("Ctrl-C stops everything.", flush=True)
        while not stop.wait(0.5):
            for broker in brokers:
                if broker.process.poll() is not None:
                    print(
                        f"broker {broker.broker_id} exited with {broker.process.returncode}; "
                        f"see {broker.log_path}",
                        file=sys.stderr,
                    )
                    return 1
        return 0
    except (ZooKeeperError, RuntimeError, TimeoutError, OSError) as error:
        print(f"tidelog-local: {error}", file=sys.stderr)
        return 1
    finally:
        description.unlink(missing_ok=True)
        for broker in reversed(brokers):
            broker.stop()
        zookeeper.stop()
        print("stopped.", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    problem = _check(args)
    if problem is not None:
        print(f"tidelog-local: {problem}", file=sys.stderr)
        return 2
    return start(args)


if __name__ == "__main__":
    sys.exit(main())
