"""Which certificate each broker serves: a TLS handshake with each live broker at the
address the metadata gives for the operator's own listener (REPLICATION), with the
operator's credentials, reading the certificate presented. The certificate step compares
it with the one in the brokers' Secret: a broker still serving an older one is told to
read its keystore again.

A broker that does not complete the handshake in time is left out (a later pass probes
it again); nothing is probed over a connection without TLS.
"""

from __future__ import annotations

import hashlib
import socket
from collections.abc import Mapping

from tidelog.admin import AdminClient

__all__ = ["PROBE_TIMEOUT_S", "served_fingerprints"]

PROBE_TIMEOUT_S = 5.0


def served_fingerprints(
    admin: AdminClient, addresses: Mapping[int, tuple[str, int]]
) -> dict[int, str]:
    """Broker id → the SHA-256 fingerprint (hex) of the certificate it presents at its
    address; empty when ``admin`` does not use TLS."""
    security = admin.security
    if security is None or security.ssl_context is None:
        return {}
    served = {}
    for broker, (host, port) in sorted(addresses.items()):
        try:
            with (
                socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S) as raw,
                security.ssl_context.wrap_socket(raw, server_hostname=host) as tls,
            ):
                certificate = tls.getpeercert(binary_form=True)
        except OSError:
            continue
        if certificate:
            served[broker] = hashlib.sha256(certificate).hexdigest()
    return served
