"""``python -m tidelog_operator [--namespace NS ...]``: the operator, watching every
namespace or the given ones, with kopf's liveness endpoint on port 8080
(``/healthz``)."""

from __future__ import annotations

import sys

from kopf import cli


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    scope = (
        args
        if any(a.startswith(("--namespace", "-n")) for a in args)
        else ["--all-namespaces", *args]
    )
    cli.main(
        [
            "run",
            "--module",
            "tidelog_operator.handlers",
            "--liveness",
            "http://0.0.0.0:8080/healthz",
            *scope,
        ],
        prog_name="tidelog-operator",
    )


if __name__ == "__main__":
    main()
