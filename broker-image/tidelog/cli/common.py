"""What the Kafka-style command-line tools share: their two kinds of error, an argument
parser that reports bad input as one line, and the checks and reads every tool makes.

Each tool prints an error as one ``Error: ...`` line on stderr and exits with status 1,
as Kafka's tools do (without their stack traces).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import TextIO, TypeVar

from tidelog.admin import AdminError
from tidelog.protocol.errors import ProtocolError
from tidelog.security.client_security import ClientSecurity
from tidelog.security.sasl_client import SaslAuthenticationFailed
from tidelog.server.properties import parse_properties

__all__ = [
    "CommandError",
    "Parser",
    "UsageError",
    "check_bootstrap",
    "command_config",
    "option_name",
    "read_text",
    "run_tool",
]

Options = TypeVar("Options")


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit status 1."""


class CommandError(Exception):
    """A failure while running a command: printed as one line, exit status 1."""


class Parser(argparse.ArgumentParser):
    """argparse, but a bad option is a UsageError (one line, no usage dump)."""

    def error(self, message: str):
        raise UsageError(message)


def option_name(name: str) -> str:
    """An argparse destination as Kafka's tools name the option: ``[bootstrap-server]``."""
    return f"[{name.replace('_', '-')}]"


def check_bootstrap(value: str) -> str:
    """``--bootstrap-server``'s list of HOST:PORT, normalised; UsageError otherwise."""
    for address in value.split(","):
        host, sep, port = address.strip().rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise UsageError(
                f"Invalid --bootstrap-server {value!r}: expected HOST:PORT[,HOST:PORT...]"
            )
    return ",".join(a.strip() for a in value.split(","))


def command_config(path: str | None, option: str = "command-config") -> ClientSecurity | None:
    """``--command-config FILE`` (Kafka's client properties: ``security.protocol``,
    ``ssl.*``, ``sasl.*``) as the way the tool connects; None without the option.
    A file that cannot be read or used is a UsageError naming it."""
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as file:
            properties = parse_properties(file.read())
        return ClientSecurity.from_properties(properties)
    except OSError as error:
        raise UsageError(f"Cannot read --{option} {path}: {error.strerror}") from None
    except ValueError as error:
        raise UsageError(f"Invalid --{option} {path}: {error}") from None


def read_text(path: str, what: str = "") -> str:
    """A file's text; CommandError naming ``what`` (and the file) when it cannot be read."""
    try:
        with open(path, encoding="utf-8") as file:
            return file.read()
    except OSError as error:
        raise CommandError(
            f"Cannot read {what + ' ' if what else ''}{path}: {error.strerror}"
        ) from None


def run_tool(
    argv: Sequence[str] | None,
    out: TextIO | None,
    err: TextIO | None,
    parse: Callable[[list[str]], Options],
    execute: Callable[[Options, TextIO, TextIO], int | None],
    *,
    failed_due_to: str | None = None,
) -> int:
    """A tool's ``main``: ``parse`` the arguments (sys.argv's by default), then
    ``execute`` them, which returns the exit status (None: 0). Bad input and failures
    print one ``Error: ...`` line on ``err`` and give status 1; a failure to reach, log
    in to or use the cluster reads ``Error: <failed_due_to> failed due to <error>`` when given,
    as Kafka's tools word it. ``--help`` gives argparse's status, Ctrl-C 130."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        options = parse(argv)
    except (UsageError, CommandError, ValueError) as error:
        print(f"Error: {error}", file=err)
        return 1
    except SystemExit as done:  # --help
        return int(done.code or 0)
    try:
        status = execute(options, out, err)
    except (CommandError, ValueError) as error:
        print(f"Error: {error}", file=err)
        return 1
    except (AdminError, OSError, ProtocolError, SaslAuthenticationFailed) as error:
        print(
            f"Error: {failed_due_to + ' failed due to ' if failed_due_to else ''}{error}", file=err
        )
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        out.flush()
    return status or 0
