"""``tidelog-healthcheck``: is the broker (or ZooKeeper) of this machine serving?

``tidelog-healthcheck [CONFIG] [--override KEY=VALUE ...]`` reads the broker's settings
the way ``tidelog-server`` does (the file, by default ``/etc/tidelog/server.properties``,
then ``TIDELOG_CONFIG_*`` variables, then ``--override``) and sends an ApiVersions
request to each of its listeners (a listener on every interface is reached on loopback),
then a Metadata request on its inter-broker listener: a broker that has had no metadata
from the controller yet (one just started: it lists no live broker) is not healthy, for
clients it would tell of an empty cluster.

Secured listeners are probed as the broker itself would reach them: TLS with the
listener's own ``ssl.*`` settings (its keystore is the client certificate where the
listener wants one), without the host name check (the certificate names the broker's
advertised addresses, the probe dials loopback); ApiVersions needs no SASL login (Kafka
answers it before authentication), and the Metadata request logs in as the broker logs
in to other brokers (``sasl.mechanism.inter.broker.protocol`` and the listener's JAAS
entry). As a readiness probe, this keeps such a broker out of a Service until the
controller has reached it.
``tidelog-healthcheck --listening [CONFIG] ...`` stops after ApiVersions: the broker is
listening, whether or not the controller has reached it. The broker opens its listeners
only once its logs are loaded (and recovered, after an unclean shutdown), so as a
startupProbe this tells a broker still recovering its logs from one that has started.
``tidelog-healthcheck --zookeeper HOST:PORT`` sends ZooKeeper's ``srvr`` instead and
wants a server that serves requests (``Mode:`` in the answer).

Exit status 0 with one line on stdout when the answer is valid, 1 with one line on stderr
otherwise. Arguments may also come from a file, one per line: ``@FILE`` (the container
entrypoint writes the ones of the server it started).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Sequence

from tidelog.admin.connection import BrokerConnection
from tidelog.protocol import ApiKey, ErrorCode, ProtocolError
from tidelog.security.client_security import ClientSecurity
from tidelog.security.listeners import inter_broker_listener, listener_specs, ssl_settings
from tidelog.security.sasl_client import SaslAuthenticationFailed
from tidelog.security.tls import client_context
from tidelog.server.config import BrokerConfig, ConfigError
from tidelog.server.env_overrides import load_config
from tidelog.zookeeper.server import four_letter_word

__all__ = ["DEFAULT_CONFIG", "HealthCheckError", "check_broker", "check_zookeeper", "main"]

PROG = "tidelog-healthcheck"
DEFAULT_CONFIG = "/etc/tidelog/server.properties"
# Addresses meaning "every interface": the broker is then reached on loopback.
_LOOPBACK = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}


class HealthCheckError(Exception):
    """The server did not answer as a healthy one does; the message says how."""


def _address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _probe_security(config: BrokerConfig, protocol: str, listener: str, *, login: bool):
    """How the probe reaches this broker's ``listener`` on loopback (module docstring)."""
    context = None
    if protocol in ("SSL", "SASL_SSL"):
        settings = ssl_settings(config, listener)
        settings["ssl.endpoint.identification.algorithm"] = ""
        context = client_context(settings)
    if login and protocol.startswith("SASL_"):
        security = ClientSecurity.for_listener(config, listener)
        return dataclasses.replace(security, ssl_context=context)
    return ClientSecurity(protocol, context)


def check_broker(config: BrokerConfig, timeout: float, *, listening: bool = False) -> str:
    """Send ApiVersions to every listener of ``config``, and (unless ``listening``)
    Metadata on the inter-broker listener; what was found, or raise
    :class:`HealthCheckError`."""
    answers = []
    live = 0
    metadata_listener = None if listening else inter_broker_listener(config)
    for spec in listener_specs(config):
        name, host, port = spec.name, spec.host, spec.port
        if port == 0:
            raise HealthCheckError(f"listener {name} has port 0: its port cannot be known")
        target = _LOOPBACK.get(host, host)
        where = f"{name} {_address(target, port)}"
        ask_metadata = name == metadata_listener
        security = _probe_security(config, spec.security_protocol, name, login=ask_metadata)
        try:
            with BrokerConnection(
                target, port, client_id=PROG, timeout=timeout, security=security
            ) as connection:
                body = {"client_software_name": PROG, "client_software_version": "1"}
                response = connection.request(ApiKey.API_VERSIONS, 3, body)
                if ask_metadata:
                    live = len(connection.request(ApiKey.METADATA, 1, {"topics": []}).brokers)
        except (OSError, ProtocolError, SaslAuthenticationFailed) as error:
            raise HealthCheckError(f"broker on {where}: {_reason(error)}") from None
        if response.error_code != ErrorCode.NONE:
            code = ErrorCode(response.error_code).name
            raise HealthCheckError(f"broker on {where} answered ApiVersions with {code}")
        if not any(item.api_key == ApiKey.API_VERSIONS for item in response.api_keys):
            raise HealthCheckError(f"broker on {where} answered ApiVersions without ApiVersions")
        if ask_metadata and not live:
            raise HealthCheckError(
                f"broker on {where} has no metadata from the controller yet (it lists no "
                "live broker)"
            )
        answers.append(f"{where} ({len(response.api_keys)} APIs)")
    if listening:
        return f"broker {config.broker_id} answers ApiVersions on {', '.join(answers)}"
    return (
        f"broker {config.broker_id} answers ApiVersions on {', '.join(answers)} "
        f"and knows {live} live brokers"
    )


def check_zookeeper(host: str, port: int, timeout: float) -> str:
    """Send ``srvr``; ZooKeeper's mode, or raise :class:`HealthCheckError`."""
    where = f"ZooKeeper on {_address(host, port)}"
    try:
        answer = four_letter_word(host, port, "srvr", timeout)
    except OSError as error:
        raise HealthCheckError(f"{where}: {_reason(error)}") from None
    for line in answer.splitlines():
        if line.startswith("Mode: "):
            return f"{where} serves ({line})"
    first = answer.strip().splitlines()[0] if answer.strip() else "no answer to srvr"
    raise HealthCheckError(f"{where} does not serve: {first}")


def _reason(error: BaseException) -> str:
    if isinstance(error, TimeoutError):
        return "no answer in time"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror.lower()
    return str(error) or type(error).__name__


def _host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Exit 0 when the broker (or ZooKeeper) here answers, 1 otherwise.",
        fromfile_prefix_chars="@",
    )
    parser.add_argument(
        "config",
        nargs="?",
        default=DEFAULT_CONFIG,
        help=f"server.properties (default {DEFAULT_CONFIG})",
    )
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="as tidelog-server's --override (repeatable)",
    )
    parser.add_argument(
        "--zookeeper",
        type=_host_port,
        metavar="HOST:PORT",
        help="check this ZooKeeper server instead of the broker",
    )
    parser.add_argument(
        "--listening",
        action="store_true",
        help="only check that every listener answers ApiVersions (no metadata wanted)",
    )
    parser.add_argument(
        "--timeout", type=float, default=5.0, metavar="S", help="seconds to wait (default 5)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.zookeeper is not None:
            print(check_zookeeper(*args.zookeeper, args.timeout))
        else:
            config, _ = load_config(args.config, args.override, os.environ)
            print(check_broker(config, args.timeout, listening=args.listening))
    except (ConfigError, HealthCheckError) as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
