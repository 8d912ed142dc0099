"""``tidelog-acls``: Apache Kafka's ``kafka-acls.sh`` with ``--bootstrap-server``, same
options and output (seed 003: kafka-acls, which users may access which topics).

* ``--add``: ACLs for ``--allow-principal``/``--deny-principal`` (from ``--allow-host``/
  ``--deny-host``, ``*`` by default) with each ``--operation`` (All by default) on each
  resource (``--topic``, ``--group``, ``--cluster``, ``--transactional-id``,
  ``--delegation-token``, as ``--resource-pattern-type`` LITERAL or PREFIXED), through
  CreateAcls. ``--producer`` and ``--consumer`` add Kafka's sets for producing (Write,
  Describe, Create on topics; Write, Describe on transactional ids; IdempotentWrite on the
  cluster with ``--idempotent``) and consuming (Read, Describe on topics; Read on groups).
* ``--remove``: those ACLs, or every ACL of the resources when no principal is named,
  through DeleteAcls, after a y/n question unless ``--force``; ``--resource-pattern-type``
  may also be ANY or MATCH.
* ``--list``: the ACLs of the resources (all without one; ``--principal`` for one
  principal's), through DescribeAcls.

``--command-config FILE`` holds Kafka's client properties (TLS, SASL). Errors are one
``Error: ...`` line on stderr with exit status 1.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TextIO

from tidelog.admin import AdminClient
from tidelog.cli.common import Parser, UsageError, check_bootstrap, command_config, run_tool
from tidelog.security.acls import (
    CLUSTER_NAME,
    WILDCARD,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from tidelog.security.client_security import ClientSecurity
from tidelog.security.principal import KafkaPrincipal

__all__ = ["Options", "main", "parse_args"]

PROG = "tidelog-acls"
OP = AclOperation
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
RESOURCE_OPTIONS = {
    "topic": ResourceType.TOPIC,
    "group": ResourceType.GROUP,
    "transactional_id": ResourceType.TRANSACTIONAL_ID,
    "delegation_token": ResourceType.DELEGATION_TOKEN,
}


def _parser() -> Parser:
    p = Parser(prog=PROG, description="Add, remove and list ACLs.")
    p.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]", help="REQUIRED: brokers")
    p.add_argument("--command-config", metavar="FILE", help="Kafka's client properties")
    for action in ("add", "remove", "list"):
        p.add_argument(f"--{action}", action="store_true")
    for name in RESOURCE_OPTIONS:
        p.add_argument(f"--{name.replace('_', '-')}", action="append", default=[])
    p.add_argument("--cluster", action="store_true")
    p.add_argument("--resource-pattern-type", default="LITERAL")
    for side in ("allow", "deny"):
        p.add_argument(f"--{side}-principal", action="append", default=[])
        p.add_argument(f"--{side}-host", action="append", default=[])
    p.add_argument("--principal", help="--list: this principal's ACLs")
    p.add_argument("--operation", action="append", default=[])
    p.add_argument("--producer", action="store_true")
    p.add_argument("--consumer", action="store_true")
    p.add_argument("--idempotent", action="store_true")
    p.add_argument("--force", action="store_true")
    return p


@dataclass
class Options:
    bootstrap: str
    action: str
    security: ClientSecurity | None = None
    resources: list[ResourcePattern] = field(default_factory=list)
    pattern_type: PatternType = PatternType.LITERAL
    entries: dict[ResourcePattern, list[AccessControlEntry]] = field(default_factory=dict)
    principals: list[str] = field(default_factory=list)
    principal: str | None = None
    force: bool = False


def _principal(text: str) -> str:
    try:
        return str(KafkaPrincipal.parse(text))
    except ValueError as error:
        raise UsageError(str(error)) from None


def _entries(a, pattern: ResourcePattern) -> list[AccessControlEntry]:
    """The entries ``--add``/``--remove`` name for one resource."""
    if a.producer or a.consumer:
        operations = []
        if pattern.resource_type is ResourceType.TOPIC:
            operations += [OP.WRITE, OP.DESCRIBE, OP.CREATE] if a.producer else []
            operations += [OP.READ, OP.DESCRIBE] if a.consumer else []
        elif pattern.resource_type is ResourceType.TRANSACTIONAL_ID and a.producer:
            operations = [OP.WRITE, OP.DESCRIBE]
        elif pattern.resource_type is ResourceType.GROUP and a.consumer:
            operations = [OP.READ]
        elif pattern.resource_type is ResourceType.CLUSTER and a.producer and a.idempotent:
            operations = [OP.IDEMPOTENT_WRITE]
        operations = list(dict.fromkeys(operations))
    else:
        try:
            operations = [OP.parse(o) for o in a.operation] or [OP.ALL]
        except ValueError as error:
            raise UsageError(str(error)) from None
    entries = []
    for permission, principals, hosts in (
        (ALLOW, a.allow_principal, a.allow_host),
        (DENY, a.deny_principal, a.deny_host),
    ):
        for principal in principals:
            for host in hosts or [WILDCARD]:
                for operation in operations:
                    entries.append(
                        AccessControlEntry(_principal(principal), host, operation, permission)
                    )
    return entries


def parse_args(argv: Sequence[str]) -> Options:
    a = _parser().parse_args(argv)
    actions = [name for name in ("add", "remove", "list") if getattr(a, name)]
    if len(actions) != 1:
        raise UsageError("Command must include exactly one action: --list, --add, --remove.")
    (action,) = actions
    if not a.bootstrap_server:
        raise UsageError("Missing required option(s): bootstrap-server")
    try:
        pattern_type = PatternType.parse(a.resource_pattern_type)
    except ValueError as error:
        raise UsageError(str(error)) from None
    if action == "add" and pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise UsageError(
            f"A '--resource-pattern-type' value of '{pattern_type.name}' is not valid when "
            "adding acls."
        )
    if a.consumer and not a.group and action != "list":
        raise UsageError("With --consumer you must specify a --group")
    if (a.producer or a.consumer) and (a.operation or action == "list"):
        raise UsageError("--producer/--consumer cannot be used with --operation or --list")
    options = Options(
        check_bootstrap(a.bootstrap_server),
        action,
        security=command_config(a.command_config),
        pattern_type=pattern_type,
        force=a.force,
    )
    for name, resource_type in RESOURCE_OPTIONS.items():
        for resource in getattr(a, name):
            options.resources.append(ResourcePattern(resource_type, resource, pattern_type))
    cluster = a.cluster or (a.producer and a.idempotent and not a.transactional_id)
    if cluster:
        options.resources.append(ResourcePattern(ResourceType.CLUSTER, CLUSTER_NAME))
    if action != "list":
        if not options.resources:
            raise UsageError(
                "You must provide at least one resource: --topic <topic> or "
                "--cluster or --group <group> or --transactional-id <id> or "
                "--delegation-token <token>"
            )
        for pattern in options.resources:
            options.entries[pattern] = _entries(a, pattern)
        if action == "add" and not any(options.entries.values()):
            raise UsageError("You must specify one of: --allow-principal, --deny-principal")
    options.principal = _principal(a.principal) if a.principal else None
    return options


def _block(title: str, pattern: ResourcePattern, entries) -> str:
    lines = "\n\t".join(str(entry) for entry in entries)
    return f"{title} `{pattern}`: \n \t{lines} \n\n"


def _add(options: Options, admin: AdminClient, out: TextIO) -> None:
    bindings = []
    for pattern, entries in options.entries.items():
        if entries:
            out.write(_block("Adding ACLs for resource", pattern, entries))
            bindings += [AclBinding(pattern, entry) for entry in entries]
    admin.create_acls(bindings)


def _remove(options: Options, admin: AdminClient, out: TextIO, answer_in: TextIO) -> None:
    filters = []
    for pattern, entries in options.entries.items():
        if not options.force:
            what = "\n\t".join(map(str, entries)) if entries else "all ACLs"
            out.write(
                f"Are you sure you want to remove ACLs: \n \t{what} \n from resource filter "
                f"`{pattern}`? (y/n)\n"
            )
            out.flush()
            if answer_in.readline().strip().lower() != "y":
                continue
        resources = ResourcePatternFilter(pattern.resource_type, pattern.name, pattern.pattern_type)
        entry_filters = [
            AccessControlEntryFilter(e.principal, e.host, e.operation, e.permission_type)
            for e in entries
        ] or [AccessControlEntryFilter()]  # no principal named: every ACL of the resource
        filters += [AclBindingFilter(resources, f) for f in entry_filters]
    admin.delete_acls(filters)


def _list(options: Options, admin: AdminClient, out: TextIO) -> None:
    wanted = [
        ResourcePatternFilter(p.resource_type, p.name, p.pattern_type) for p in options.resources
    ] or [ResourcePatternFilter()]
    found: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for resources in wanted:
        for binding in admin.describe_acls(AclBindingFilter(resources)):
            entries = found.setdefault(binding.pattern, [])
            if binding.entry not in entries:
                entries.append(binding.entry)
    if options.principal is not None:
        out.write(f"ACLs for principal `{options.principal}`\n")
        found = {
            p: [e for e in entries if e.principal == options.principal]
            for p, entries in found.items()
        }
    for pattern, entries in found.items():
        if entries:
            out.write(_block("Current ACLs for resource", pattern, sorted(entries)))


def execute(options: Options, out: TextIO, err: TextIO, answer_in: TextIO | None = None) -> int:
    admin = AdminClient(options.bootstrap, security=options.security)
    if options.action == "add":
        _add(options, admin, out)
    elif options.action == "remove":
        _remove(options, admin, out, answer_in or sys.stdin)
    else:
        _list(options, admin, out)
    return 0


def main(argv: Sequence[str] | None = None, out=None, err=None) -> int:
    return run_tool(argv, out, err, parse_args, execute, failed_due_to="ACL command")


if __name__ == "__main__":
    sys.exit(main())
