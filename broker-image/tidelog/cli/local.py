"""``tidelog-local``: a local cluster on 127.0.0.1 — ZooKeeper, brokers, a demo topic.

``make run`` runs it. Data lives under ``--base-dir`` and survives restarts; Ctrl-C
(or SIGTERM) stops the brokers cleanly, then ZooKeeper.
"""

from __future__ import annotations

import argparse
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
    parser.add_argument(
        "--base-dir",
        type=Path,
        default=Path(".run"),
        help="where ZooKeeper and the brokers keep their data (default .run)",
    )
    parser.add_argument("--brokers", type=int, default=1, help="number of brokers (default 1)")
    parser.add_argument("--zookeeper-port", type=int, default=2181)
    parser.add_argument("--port", type=int, default=9092, help="first broker's port")
    parser.add_argument("--topic", default="demo", help="demo topic to create")
    parser.add_argument("--partitions", type=int, default=3)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.brokers != 1:
        # The controller reaches other brokers once replication lands (issue 5).
        print(
            "tidelog-local: only one broker is supported until replication lands", file=sys.stderr
        )
        return 2
    base = args.base_dir.resolve()
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    zookeeper = ZooKeeperServer(base / "zookeeper", port=args.zookeeper_port)
    brokers: list[BrokerProcess] = []
    try:
        zookeeper.start()
        print(f"zookeeper   {zookeeper.connect_string}  (log: {zookeeper.log_path})", flush=True)
        for index in range(args.brokers):
            broker = BrokerProcess(
                base / f"broker-{index + 1}",
                zookeeper.connect_string,
                broker_id=index + 1,
                port=args.port + index,
            )
            brokers.append(broker.start())
            print(f"broker {index + 1}    {broker.bootstrap}  (log: {broker.log_path})", flush=True)
        bootstrap = ",".join(b.bootstrap for b in brokers)
        AdminClient(bootstrap).create_topic(
            args.topic, args.partitions, min(3, args.brokers), exist_ok=True
        )
        print(f"topic       {args.topic} ({args.partitions} partitions)")
        print(f"\nbootstrap servers: {bootstrap}")
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
        for broker in reversed(brokers):
            broker.stop()
        zookeeper.stop()
        print("stopped.", flush=True)


if __name__ == "__main__":
    sys.exit(main())
