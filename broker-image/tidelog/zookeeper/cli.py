"""``tidelog-zookeeper``: a ZooKeeper server in the foreground, standalone or, with
``--server`` for each member of an ensemble and ``--my-id``, one of the ensemble.

With ``--secure-port``, ``--tls-keystore`` and ``--tls-truststore`` (PEM files) it also
serves TLS clients, authenticated by their certificates, on the secure port, which
listens on ``--secure-host`` (``--host`` unless given); ``--quorum-tls`` makes the members
of an ensemble talk to each other over mutual TLS with the same files.

Prints ``zookeeper ready at HOST:PORT`` (with TLS: ``zookeeper ready at HOST:PORT, TLS at
HOST:PORT``) once the server serves requests, then waits.
SIGTERM or SIGINT stops the server and exits 0. Exit status 1, with one line on stderr,
when the server cannot start (jars, Java or a TLS file missing, port taken, ...) or dies
on its own.
The server's own log is ``zookeeper.log`` in the data directory.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from .server import ZooKeeperError, ZooKeeperServer, ZooKeeperTls

__all__ = ["main"]

PROG = "tidelog-zookeeper"
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class _StopRequested(Exception):
    """Raised by the signal handler so that every wait unwinds to the clean stop."""


def _request_stop(signum: int, frame: object) -> None:
    raise _StopRequested


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Run a ZooKeeper server, standalone or one of an ensemble, in the foreground.",
    )
    parser.add_argument("--port", type=int, required=True, help="client port; 0 picks a free one")
    parser.add_argument(
        "--data-dir",
        type=Path,
        required=True,
        help="snapshots, transaction logs, zoo.cfg and zookeeper.log go here",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--tick-time", type=int, default=2000, metavar="MS")
    parser.add_argument("--max-client-cnxns", type=int, default=60, metavar="N")
    parser.add_argument(
        "--start-timeout", type=float, default=30.0, metavar="S", help="give up after S seconds"
    )
    parser.add_argument(
        "--server",
        action="append",
        type=_server,
        default=[],
        metavar="ID=HOST:PEER_PORT:ELECTION_PORT",
        help="a member of the ensemble (repeat for each, this one included)",
    )
    parser.add_argument("--my-id", type=int, metavar="ID", help="this server's id in the ensemble")
    tls = parser.add_argument_group("TLS")
    tls.add_argument(
        "--secure-port", type=int, metavar="PORT", help="TLS client port; 0 picks a free one"
    )
    tls.add_argument(
        "--secure-host", metavar="ADDR", help="address the TLS port listens on (default: --host)"
    )
    tls.add_argument(
        "--tls-keystore", type=Path, metavar="PEM", help="the server's private key and chain"
    )
    tls.add_argument(
        "--tls-truststore", type=Path, metavar="PEM", help="the CAs of clients and peers"
    )
    tls.add_argument(
        "--client-auth",
        choices=("need", "want", "none"),
        default="need",
        help="whether TLS clients must present a certificate (default: need)",
    )
    tls.add_argument(
        "--quorum-tls", action="store_true", help="mutual TLS between the ensemble's members"
    )
    tls.add_argument(
        "--quorum-hostname-verification",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="peers' certificates must name their addresses or host names (default: on)",
    )
    return parser


def _server(text: str) -> tuple[int, str]:
    number, sep, address = text.partition("=")
    if not sep or not number.isdigit() or address.count(":") != 2:
        raise argparse.ArgumentTypeError(f"{text!r} is not ID=HOST:PEER_PORT:ELECTION_PORT")
    return int(number), address


def _tls(parser: argparse.ArgumentParser, args: argparse.Namespace) -> ZooKeeperTls | None:
    given = (args.secure_port is not None, args.tls_keystore, args.tls_truststore)
    if not any(given):
        if args.quorum_tls or args.secure_host:
            parser.error("--quorum-tls and --secure-host need --secure-port and the TLS files")
        return None
    if not all(given):
        parser.error("--secure-port, --tls-keystore and --tls-truststore go together")
    if args.quorum_tls and not args.server:
        parser.error("--quorum-tls needs an ensemble (--server and --my-id)")
    return ZooKeeperTls(
        args.tls_keystore,
        args.tls_truststore,
        args.client_auth,
        quorum=args.quorum_tls,
        quorum_hostname_verification=args.quorum_hostname_verification,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    servers = dict(args.server)
    if bool(servers) != (args.my_id is not None) or (servers and args.my_id not in servers):
        parser.error("an ensemble member needs --server for each member and --my-id among them")
    tls = _tls(parser, args)
    server = ZooKeeperServer(
        args.data_dir,
        port=args.port,
        host=args.host,
        tick_time=args.tick_time,
        max_client_cnxns=args.max_client_cnxns,
        servers=servers or None,
        my_id=args.my_id,
        tls=tls,
        secure_port=args.secure_port or 0,
        secure_host=args.secure_host,
    )
    previous = {signum: signal.signal(signum, _request_stop) for signum in _STOP_SIGNALS}
    try:
        server.start(args.start_timeout)
        secure = f", TLS at {server.secure_connect_string}" if tls is not None else ""
        print(f"zookeeper ready at {server.connect_string}{secure}", flush=True)
        status = server.wait()
        raise ZooKeeperError(f"ZooKeeper exited with status {status}; see {server.log_path}")
    except _StopRequested:
        return 0
    except ZooKeeperError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    finally:
        for signum in _STOP_SIGNALS:  # a second Ctrl-C must not cut the stop short
            signal.signal(signum, signal.SIG_IGN)
        server.stop()
        for signum, handler in previous.items():
            signal.signal(signum, handler)


if __name__ == "__main__":
    sys.exit(main())
