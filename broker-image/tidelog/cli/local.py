"""``tidelog-local``: a local cluster on 127.0.0.1 — ZooKeeper, N brokers, a demo topic —
in the foreground (``start``), and its brokers stopped and started one by one
(``stop-broker``, ``restart-broker``) to try failover.

``make run`` runs ``start``. ``--override key=value`` (repeatable) sets a broker property
of every broker, checked as the broker checks it before anything starts. Data lives
under ``--dir`` and survives restarts. Once every
broker answers, ``<dir>/cluster.json`` describes the cluster for scripts and tests: the
bootstrap address (every broker, as a client is configured, whether up or not), the
ZooKeeper connect string and, per broker, its id, port, whether it runs, its pid (null
when down), the exit code it last stopped with (null while it runs), its config file,
log file and log dirs.

A broker that dies leaves the others and ZooKeeper serving: ``start`` says which broker
died (id, exit code, log file) and how to start it again, and rewrites ``cluster.json``.
``restart-broker N`` starts broker N again with the same config file and log dirs, and
returns once it serves (after a kill -9 it first waits for ZooKeeper to expire the old
session: see ``KafkaZkClient.register_broker``); ``stop-broker N`` stops it with SIGTERM,
through its controlled shutdown, and returns once it exited. Both are one request to the
running ``start``, over a unix socket in ``--dir`` (:mod:`tidelog.cli.local_control`):
the brokers are children of ``start``, which alone can wait for them, so it starts and
stops them itself, between its checks of the brokers, and ``cluster.json`` has one
writer. ``restart-broker`` on a running broker is an error, as starting a second broker
with a running broker's id is in Kafka: a silent no-op would hide that the broker was not
down, and bouncing a serving broker is ``stop-broker`` then ``restart-broker``.

Ctrl-C or SIGTERM stops ``start``: the running brokers cleanly (SIGTERM each, last
started first), then ZooKeeper; ``cluster.json`` and the control socket are removed.
When ``start`` dies without stopping them (SIGKILL), ZooKeeper and every broker get
SIGTERM from the kernel (:mod:`tidelog.child_process`), so none is left holding its port.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from tidelog.admin import AdminClient, AdminError
from tidelog.child_process import dying_with_parent
from tidelog.cli.local_control import ControlError, ControlServer, request
from tidelog.cli.local_security import MODES, LocalSecurity
from tidelog.server.config import BROKER_CONFIGS, ConfigError
from tidelog.server.process import BrokerProcess
from tidelog.zookeeper import ZooKeeperError, ZooKeeperServer

__all__ = ["LocalCluster", "main"]

# How often start looks at its brokers (and at most how long a Ctrl-C waits for it).
_CHECK_INTERVAL_S = 0.5
# How long restart-broker and stop-broker wait for the answer of start: a restart may
# wait out the old session (1.5 x 6 s) and a log recovery, a stop a controlled shutdown.
_REQUEST_TIMEOUT_S = 180.0
# How long start waits for the controller to take in every broker's registration.
_REGISTRATION_TIMEOUT_S = 60.0
_REGISTRATION_POLL_S = 0.1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tidelog-local", description="A local tidelog cluster on 127.0.0.1."
    )
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
    start.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a broker property for every broker, as tidelog-server --override (repeatable; "
        "e.g. num.partitions=3, auto.create.topics.enable=false)",
    )
    start.add_argument(
        "--security",
        choices=MODES,
        default="plaintext",
        help="plaintext (default); ssl: TLS with client certificates; sasl_ssl: TLS with "
        "SCRAM-SHA-512 logins; both turn the ACL authorizer on with the super user admin "
        "(see <dir>/client.properties)",
    )
    for name, help_text in (
        ("restart-broker", "start a broker of the running cluster again"),
        ("stop-broker", "stop a broker of the running cluster (controlled shutdown)"),
    ):
        command = commands.add_parser(name, help=help_text)
        command.add_argument("broker_id", type=int, metavar="BROKER_ID")
        command.add_argument(
            "--dir", type=Path, default=Path(".run"), help="the --dir of start (default .run)"
        )
    return parser


# What tidelog-local sets for each broker itself.
_MANAGED_PROPERTIES = frozenset({"broker.id", "listeners", "log.dirs", "zookeeper.connect"})


def _overrides(items: list[str]) -> tuple[dict[str, str], str | None]:
    """``--override key=value`` arguments as properties, each checked as a broker checks
    it; the first problem as one line, or None."""
    properties: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            return properties, f"--override expects key=value, got {item!r}"
        if key in _MANAGED_PROPERTIES:
            return properties, f"--override {key}: tidelog-local sets it for each broker"
        definition = BROKER_CONFIGS.get(key)
        if definition is None:
            return properties, f"--override {key}: not a broker config"
        try:
            definition.parse(value)
        except ConfigError as error:
            return properties, f"--override {key}={value}: {error}"
        properties[key] = value
    return properties, None


def _check(args: argparse.Namespace) -> str | None:
    """The first problem with the arguments, as one line, or None."""
    args.properties, problem = _overrides(args.override)
    if problem is not None:
        return problem
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
    ports = {args.zk_port: "ZooKeeper's (--zk-port)"}
    for index in range(args.brokers):
        ports.setdefault(args.base_port + index, f"broker {index + 1}'s (--base-port)")
    for port, whose in ports.items():
        if _in_use(port):
            return f"port {port}, {whose}, is in use on 127.0.0.1: choose another"
    return None


def _in_use(port: int) -> bool:
    """Whether a listener on 127.0.0.1 could not take ``port`` (as a broker binds it)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def _exit_status(code: int) -> str:
    """``1``, or ``-9 (SIGKILL)`` for a process a signal ended."""
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"{code} ({signal.Signals(-code).name})"
    return str(code)


class _LocalBroker(BrokerProcess):
    """A broker that gets SIGTERM when ``start`` dies (started from its main thread,
    which lives as long as ``start``)."""

    def command(self) -> list[str]:
        return dying_with_parent(super().command())


def _write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".tmp")
    partial.write_text(text)
    os.replace(partial, path)


class LocalCluster:
    """The ZooKeeper and brokers of a running ``start``: which brokers run, what
    ``cluster.json`` says of them, and the requests of ``restart-broker`` and
    ``stop-broker``. Used by the start process's main thread only."""

    def __init__(
        self,
        base: Path,
        zookeeper: ZooKeeperServer,
        brokers: list[BrokerProcess],
        security: LocalSecurity,
    ):
        self.base = base
        self.security = security
        self.description_path = base / "cluster.json"
        self.zookeeper = zookeeper
        self.brokers = {broker.broker_id: broker for broker in brokers}
        # Exit code of each broker known to be down.
        self.down: dict[int, int] = {}

    def describe(self) -> dict:
        """What ``cluster.json`` holds (see the module's docstring)."""
        return {
            "bootstrap": ",".join(b.bootstrap for b in self.brokers.values()),
            "zookeeper": self.zookeeper.connect_string,
            "brokers": [
                {
                    "id": b.broker_id,
                    "port": b.port,
                    "running": b.broker_id not in self.down,
                    "pid": None if b.broker_id in self.down else b.process.pid,
                    "exit_code": self.down.get(b.broker_id),
                    "config": str(b.config_path),
                    "log": str(b.log_path),
                    "log_dirs": [str(d) for d in b.log_dirs],
                }
                for b in self.brokers.values()
            ],
            "security": self.security.describe(),
        }

    def write_description(self) -> None:
        _write_atomically(self.description_path, json.dumps(self.describe(), indent=2) + "\n")

    def command_line(self, command: str, broker_id: int) -> str:
        return f"tidelog-local {command} {broker_id} --dir {self.base}"

    def notice_deaths(self) -> None:
        """Mark the brokers that exited, not on request, since the last look as down,
        rewrite ``cluster.json`` and say on stderr which died and how to start it again."""
        died = [
            broker
            for broker_id, broker in self.brokers.items()
            if broker_id not in self.down and broker.process.poll() is not None
        ]
        for broker in died:
            self.down[broker.broker_id] = broker.process.returncode
            print(
                f"broker {broker.broker_id} died: exit code "
                f"{_exit_status(broker.process.returncode)}; its log: {broker.log_path}\n"
                "the other brokers keep serving; start it again with: "
                f"{self.command_line('restart-broker', broker.broker_id)}",
                file=sys.stderr,
                flush=True,
            )
        if died:
            self.write_description()

    def handle(self, words: list[str]) -> str:
        """A control request (:mod:`tidelog.cli.local_control`): its ``ok`` message, or
        ControlError with its ``error`` message."""
        if len(words) != 2 or words[0] not in ("restart-broker", "stop-broker"):
            raise ControlError(f"unknown request {' '.join(words)!r}")
        try:
            broker_id = int(words[1])
        except ValueError:
            raise ControlError(f"{words[1]!r} is not a broker id") from None
        if broker_id not in self.brokers:
            known = ", ".join(str(b) for b in self.brokers)
            raise ControlError(f"no broker {broker_id} in this cluster (brokers {known})")
        self.notice_deaths()  # a broker that died since the last look is down
        if words[0] == "restart-broker":
            return self.restart_broker(broker_id)
        return self.stop_broker(broker_id)

    def restart_broker(self, broker_id: int) -> str:
        """Start a broker that is down again, with its config file and log dirs; done
        once it answers a Metadata request, which it does once registered in ZooKeeper."""
        broker = self.brokers[broker_id]
        if broker_id not in self.down:
            raise ControlError(
                f"broker {broker_id} is running (pid {broker.process.pid}); stop it first: "
                f"{self.command_line('stop-broker', broker_id)}"
            )
        try:
            broker.start()  # returns once its listener answers, killed when it never does
        except (RuntimeError, TimeoutError):
            raise self._failed_start(broker) from None
        del self.down[broker_id]
        self.write_description()
        try:
            AdminClient(broker.bootstrap).metadata([])
        except OSError as error:
            if broker.process.poll() is not None:
                raise self._failed_start(broker) from None
            raise ControlError(
                f"broker {broker_id} runs (pid {broker.process.pid}) but does not answer "
                f"({error}); see its log {broker.log_path}"
            ) from None
        return f"broker {broker_id} is running again (pid {broker.process.pid})"

    def _failed_start(self, broker: BrokerProcess) -> ControlError:
        """A broker that exited while starting: marked down, and the error to answer."""
        self.down[broker.broker_id] = broker.process.returncode
        self.write_description()
        return ControlError(
            f"broker {broker.broker_id} exited with "
            f"{_exit_status(broker.process.returncode)} while starting; see its log "
            f"{broker.log_path}"
        )

    def stop_broker(self, broker_id: int) -> str:
        """SIGTERM a running broker and wait for it: its controlled shutdown moves its
        leaderships away first. Killed when it does not exit in time."""
        broker = self.brokers[broker_id]
        if broker_id in self.down:
            raise ControlError(f"broker {broker_id} is not running")
        try:
            broker.stop()
            killed = False
        except subprocess.TimeoutExpired:
            killed = True
        self.down[broker_id] = broker.process.returncode
        self.write_description()
        if killed:
            raise ControlError(
                f"broker {broker_id} did not stop within {broker.start_timeout:g} s and was "
                f"killed; see its log {broker.log_path}"
            )
        return (
            f"broker {broker_id} stopped (exit code {_exit_status(broker.process.returncode)}); "
            f"start it again with: {self.command_line('restart-broker', broker_id)}"
        )


def start(args: argparse.Namespace) -> int:
    base = args.dir.resolve()
    base.mkdir(parents=True, exist_ok=True)
    description = base / "cluster.json"
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    zookeeper = ZooKeeperServer(base / "zookeeper", port=args.zk_port)
    security = LocalSecurity.prepare(args.security, base)
    brokers: list[BrokerProcess] = []
    control: ControlServer | None = None
    try:
        control = ControlServer(base)
        zookeeper.start()
        print(f"zookeeper   {zookeeper.connect_string}  (log: {zookeeper.log_path})", flush=True)
        security.register_admin(zookeeper.connect_string)
        for index in range(args.brokers):
            broker = _LocalBroker(
                base / f"broker-{index + 1}",
                zookeeper.connect_string,
                broker_id=index + 1,
                port=args.base_port + index,
                log_dirs=args.log_dirs_per_broker,
                # the offsets topic waits for this many alive brokers (unless overridden)
                overrides={
                    "offsets.topic.replication.factor": str(min(3, args.brokers)),
                    **security.broker_properties(args.base_port + index),
                    **args.properties,
                },
            )
            brokers.append(broker.start())
            print(f"broker {index + 1}    {broker.bootstrap}  (log: {broker.log_path})", flush=True)
        cluster = LocalCluster(base, zookeeper, brokers, security)
        bootstrap = cluster.describe()["bootstrap"]
        admin = AdminClient(bootstrap, security=security.client_security())
        _wait_for_registrations(admin, args.brokers, stop)
        admin.create_topic(args.topic, args.partitions, args.replication_factor, exist_ok=True)
        print(
            f"topic       {args.topic} ({args.partitions} partitions, "
            f"replication factor {args.replication_factor})"
        )
        cluster.write_description()
        print(f"\nbootstrap servers: {bootstrap}  (described in {description})")
        client_config = (
            "" if args.security == "plaintext" else f" --producer.config {base}/client.properties"
        )
        print(
            "try: kafka-console-producer --bootstrap-server "
            f"{brokers[0].bootstrap} --topic {args.topic}{client_config}"
        )
        print(
            f"failover: {cluster.command_line('stop-broker', 1)} (or kill -9 its pid), then "
            f"{cluster.command_line('restart-broker', 1)}"
        )
        print("Ctrl-C stops everything.", flush=True)
        while not stop.is_set():
            control.serve(cluster.handle, _CHECK_INTERVAL_S)
            cluster.notice_deaths()
        return 0
    except (ZooKeeperError, RuntimeError, TimeoutError, OSError, ControlError, AdminError) as error:
        print(f"tidelog-local: {error}", file=sys.stderr)
        return 1
    finally:
        description.unlink(missing_ok=True)
        if control is not None:
            control.close()
        for broker in reversed(brokers):
            broker.stop()
        zookeeper.stop()
        print("stopped.", flush=True)


def _wait_for_registrations(admin: AdminClient, brokers: int, stop: threading.Event) -> None:
    """Wait until the cluster's metadata lists every broker: a broker's port answers
    before the controller has taken in its registration, and a topic created meanwhile
    would find too few brokers for its replication factor."""
    deadline = time.monotonic() + _REGISTRATION_TIMEOUT_S
    live: list[int] = []
    while not stop.is_set() and time.monotonic() < deadline:
        with contextlib.suppress(AdminError, OSError):
            live = admin.live_brokers()
        if len(live) >= brokers:
            return
        stop.wait(_REGISTRATION_POLL_S)
    if not stop.is_set():
        raise TimeoutError(
            f"{len(live)} of {brokers} brokers registered after {_REGISTRATION_TIMEOUT_S:g} s"
        )


def send(args: argparse.Namespace) -> int:
    """``restart-broker`` and ``stop-broker``: one request to the running start."""
    try:
        print(request(args.dir, [args.command, str(args.broker_id)], _REQUEST_TIMEOUT_S))
    except (ControlError, OSError) as error:
        print(f"tidelog-local: {error}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command != "start":
        return send(args)
    problem = _check(args)
    if problem is not None:
        print(f"tidelog-local: {problem}", file=sys.stderr)
        return 2
    return start(args)


if __name__ == "__main__":
    sys.exit(main())
