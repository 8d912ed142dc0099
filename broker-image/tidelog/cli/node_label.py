"""``tidelog-node-label``: write the value of one label of a Kubernetes node to a file.

A broker pod's init container runs it to learn its rack (``broker.rack`` from the
node's ``topologyKey`` label, as Strimzi does), with the pod's service account, which
may read nodes::

    tidelog-node-label --node "$NODE_NAME" --label topology.kubernetes.io/zone \\
        --output /etc/tidelog/rack/rack

It asks the API server in the pod's environment (``KUBERNETES_SERVICE_HOST`` and
``_PORT``, the service account's token and CA), or the one of ``--api-server``,
``--token-file`` and ``--ca-file``; it needs nothing but the standard library. A node
without that label, or an answer other than the node, is one line on stderr and exit
status 1: a broker without its rack would break the rack-aware placement of the others.
"""

from __future__ import annotations

import argparse
import json
import os
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main", "node_label"]

PROG = "tidelog-node-label"
ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class NodeLabelError(Exception):
    """The label could not be read; the message says why in one line."""


def node_label(api_server: str, token: str, ca_file: str, node: str, label: str) -> str:
    url = f"{api_server.rstrip('/')}/api/v1/nodes/{urllib.parse.quote(node)}"
    request = urllib.request.Request(
        url, headers={"Authorization": f"Bearer {token}", "Accept": "application/json"}
    )
    context = ssl.create_default_context(cafile=ca_file)
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as answer:
            body = json.load(answer)
    except urllib.error.HTTPError as error:
        raise NodeLabelError(f"reading node {node}: HTTP {error.code} {error.reason}") from None
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise NodeLabelError(f"reading node {node} at {api_server}: {error}") from None
    labels = body.get("metadata", {}).get("labels") or {}
    if label not in labels:
        raise NodeLabelError(f"node {node} has no label {label}")
    return labels[label]


def _parser() -> argparse.ArgumentParser:
    in_cluster = ""
    if "KUBERNETES_SERVICE_HOST" in os.environ:
        host = os.environ["KUBERNETES_SERVICE_HOST"]
        host = f"[{host}]" if ":" in host else host
        in_cluster = f"https://{host}:{os.environ.get('KUBERNETES_SERVICE_PORT', '443')}"
    p = argparse.ArgumentParser(prog=PROG, description="Write a node label's value to a file.")
    p.add_argument("--node", required=True, help="the node's name")
    p.add_argument("--label", required=True, help="the label's key")
    p.add_argument("--output", required=True, help="the file to write the value to")
    p.add_argument("--api-server", default=in_cluster, help="https://host:port (in-cluster)")
    p.add_argument("--token-file", default=str(ACCOUNT / "token"))
    p.add_argument("--ca-file", default=str(ACCOUNT / "ca.crt"))
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if not args.api_server:
            raise NodeLabelError("no API server: not in a pod, and no --api-server")
        try:
            token = Path(args.token_file).read_text().strip()
        except OSError as error:
            raise NodeLabelError(
                f"cannot read the token {args.token_file}: {error.strerror}"
            ) from None
        value = node_label(args.api_server, token, args.ca_file, args.node, args.label)
        Path(args.output).write_text(value)
    except (NodeLabelError, OSError) as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 1
    print(f"{args.label}={value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
