"""ACLs in ZooKeeper, exactly where and how Kafka's AclAuthorizer keeps them, and the
change notifications that keep every broker's cache current (seed 003: ``kafka-acls``
sets which users may access which topics).

Znodes (the same as Kafka 3.9's, so that ``kafka-acls.sh --authorizer-properties
zookeeper.connect=...`` and tidelog read and write one store):

* a LITERAL pattern's entries: ``/kafka-acl/<Type>/<name>``; a PREFIXED pattern's:
  ``/kafka-acl-extended/prefixed/<Type>/<name>``, ``<Type>`` written ``TransactionalId``;
  the document ``{"acls":[{"principal":"User:alice","permissionType":"Allow","host":"*",
  "operation":"Read"}],"version":1}``. A pattern left without entries loses its znode.
* a change to a LITERAL pattern: a sequential ``/kafka-acl-changes/acl_changes_<seq>``
  holding ``TOPIC:<name>``; to a PREFIXED one: ``/kafka-acl-extended-changes/
  acl_changes_<seq>`` holding ``{"version":1,"resourceType":"TOPIC","name":...,
  "patternType":"PREFIXED"}``. Notifications are deleted 15 minutes after they were made.

Writes are read-modify-write with the znode's version (a conditional set, a create that
fails if another made the node first, a conditional delete), tried again on a conflict,
as Kafka's are; many patterns' reads and writes are pipelined. All calls here block: the
broker runs them in worker threads.

:class:`AclChangeFollower` is the broker's side: it loads every ACL into the authorizer
at start, then, woken by a watch on both notification paths, reads again each pattern a
new notification names.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, ConnectionLoss, NodeExistsError, NoNodeError

from tidelog.controller.zk_session import SESSION_ERRORS
from tidelog.security.acls import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from tidelog.security.authorizer import AclAuthorizer

__all__ = [
    "ACL_CHANGE_EXPIRATION_MS",
    "AclChangeFollower",
    "AclStore",
    "decode_acls",
    "encode_acls",
]

logger = logging.getLogger(__name__)

LITERAL_ROOT = "/kafka-acl"
PREFIXED_ROOT = "/kafka-acl-extended/prefixed"
LITERAL_CHANGES = "/kafka-acl-changes"
EXTENDED_CHANGES = "/kafka-acl-extended-changes"
CHANGE_PREFIX = "acl_changes_"
ACL_CHANGE_EXPIRATION_MS = 15 * 60 * 1000
# The resource types Kafka makes a directory for under each root.
STORED_TYPES = (
    ResourceType.TOPIC,
    ResourceType.GROUP,
    ResourceType.CLUSTER,
    ResourceType.TRANSACTIONAL_ID,
    ResourceType.DELEGATION_TOKEN,
    ResourceType.USER,
)
RETRY_AFTER_FAILURE_S = 1

# A pattern's new entries as a function of its current ones.
AclChange = Callable[[frozenset[AccessControlEntry]], frozenset[AccessControlEntry]]


def _root(pattern_type: PatternType) -> str:
    return LITERAL_ROOT if pattern_type is PatternType.LITERAL else PREFIXED_ROOT


def _path(pattern: ResourcePattern) -> str:
    return f"{_root(pattern.pattern_type)}/{pattern.resource_type.zk_name}/{pattern.name}"


def encode_acls(entries: Iterable[AccessControlEntry]) -> bytes:
    """A pattern's entries as its znode holds them (Kafka's version 1 document)."""
    acls = [
        {
            "principal": entry.principal,
            "permissionType": entry.permission_type.zk_name,
            "host": entry.host,
            "operation": entry.operation.zk_name,
        }
        for entry in sorted(entries)
    ]
    return json.dumps({"acls": acls, "version": 1}, separators=(",", ":")).encode()


def decode_acls(data: bytes | None) -> frozenset[AccessControlEntry]:
    """The entries of a pattern's znode (none for an empty node); ValueError when it
    is not Kafka's document."""
    if not data:
        return frozenset()
    document = json.loads(data)
    return frozenset(
        AccessControlEntry(
            acl["principal"],
            acl["host"],
            AclOperation.parse(acl["operation"]),
            AclPermissionType.parse(acl["permissionType"]),
        )
        for acl in document.get("acls", [])
    )


def _encode_change(pattern: ResourcePattern) -> tuple[str, bytes]:
    if pattern.pattern_type is PatternType.LITERAL:
        return LITERAL_CHANGES, f"{pattern.resource_type.name}:{pattern.name}".encode()
    document = {
        "version": 1,
        "resourceType": pattern.resource_type.name,
        "name": pattern.name,
        "patternType": pattern.pattern_type.name,
    }
    return EXTENDED_CHANGES, json.dumps(document, separators=(",", ":")).encode()


def _decode_change(changes_path: str, data: bytes) -> ResourcePattern:
    text = data.decode()
    if changes_path == LITERAL_CHANGES:
        resource_type, _, name = text.partition(":")
        return ResourcePattern(ResourceType.parse(resource_type), name, PatternType.LITERAL)
    document = json.loads(text)
    return ResourcePattern(
        ResourceType.parse(document["resourceType"]),
        document["name"],
        PatternType.parse(document["patternType"]),
    )


def _entries_and_version(read) -> tuple[frozenset[AccessControlEntry], int]:
    """A pattern's entries and its znode's version (-1: no znode) from a kazoo read."""
    try:
        data, stat = read.get()
    except NoNodeError:
        return frozenset(), -1
    return decode_acls(data), stat.version


def _change_number(name: str) -> int:
    return int(name[len(CHANGE_PREFIX) :])


class AclStore:
    """The ACL znodes, through a started kazoo client (the broker's, or a tool's)."""

    def __init__(self, zk: KazooClient):
        self.zk = zk

    def ensure_paths(self) -> None:
        """Kafka's directories: one per resource type under each root, and both
        notification paths."""
        for root in (LITERAL_ROOT, PREFIXED_ROOT):
            for resource_type in STORED_TYPES:
                self.zk.ensure_path(f"{root}/{resource_type.zk_name}")
        self.zk.ensure_path(LITERAL_CHANGES)
        self.zk.ensure_path(EXTENDED_CHANGES)

    def read(self, pattern: ResourcePattern) -> tuple[frozenset[AccessControlEntry], int]:
        """The pattern's entries and its znode's version (-1: no znode)."""
        return _entries_and_version(self.zk.get_async(_path(pattern)))

    def read_all(
        self, patterns: Iterable[ResourcePattern]
    ) -> dict[ResourcePattern, frozenset[AccessControlEntry] | ValueError | KeyError]:
        """Each pattern's entries, read in one pipelined round trip (a broker starting,
        or following a tool that changed thousands at once, reads that many); a znode
        that does not parse gives its error instead."""
        reads = [(pattern, self.zk.get_async(_path(pattern))) for pattern in patterns]
        found: dict = {}
        for pattern, read in reads:
            try:
                found[pattern] = _entries_and_version(read)[0]
            except (ValueError, KeyError) as error:
                found[pattern] = error
        return found

    def load_all(self) -> dict[ResourcePattern, frozenset[AccessControlEntry]]:
        """Every pattern's entries (patterns whose znode does not parse are logged and
        left out)."""
        patterns = []
        for pattern_type in (PatternType.LITERAL, PatternType.PREFIXED):
            for resource_type in STORED_TYPES:
                directory = f"{_root(pattern_type)}/{resource_type.zk_name}"
                try:
                    names = self.zk.get_children(directory)
                except NoNodeError:
                    continue
                patterns += [ResourcePattern(resource_type, n, pattern_type) for n in names]
        found = {}
        for pattern, entries in self.read_all(patterns).items():
            if isinstance(entries, Exception):
                logger.error("ignoring the ACLs of %s: %r", pattern, entries)
            elif entries:
                found[pattern] = entries
        return found

    def update(self, pattern: ResourcePattern, change: AclChange) -> frozenset[AccessControlEntry]:
        """:meth:`update_all` of one pattern: the entries now stored (its error raised)."""
        outcome = self.update_all({pattern: change})[pattern]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def update_all(
        self, changes: Mapping[ResourcePattern, AclChange]
    ) -> dict[ResourcePattern, frozenset[AccessControlEntry] | ValueError | KeyError]:
        """Apply each pattern's change to its entries with a conditional write, announce
        each pattern written, and return the entries now stored (or the error of a znode
        that does not parse). Pipelined: every znode is read in one round trip, every
        write made in the next and every notification in a third, so that a request
        with thousands of patterns (CreateAcls, DeleteAcls) takes three round trips, not
        three per pattern; the patterns whose write met another writer's are read and
        written again."""
        outcomes: dict = {}
        pending = dict(changes)
        while pending:
            reads = [(pattern, self.zk.get_async(_path(pattern))) for pattern in pending]
            writes = []
            for pattern, read in reads:
                try:
                    current, version = _entries_and_version(read)
                except (ValueError, KeyError) as error:
                    outcomes[pattern] = error
                    continue
                wanted = frozenset(pending[pattern](current))
                if wanted == current:
                    outcomes[pattern] = current
                else:
                    writes.append((pattern, wanted, self._write_async(pattern, wanted, version)))
            conflicts = {}
            notifications = []
            for pattern, wanted, write in writes:
                try:
                    write.get()
                except (BadVersionError, NodeExistsError, NoNodeError):
                    conflicts[pattern] = pending[pattern]  # another writer came first
                    continue
                outcomes[pattern] = wanted
                changes_path, data = _encode_change(pattern)
                notifications.append(
                    self.zk.create_async(
                        f"{changes_path}/{CHANGE_PREFIX}", data, sequence=True, makepath=True
                    )
                )
            for notification in notifications:
                notification.get()
            pending = conflicts
        return outcomes

    def _write_async(
        self, pattern: ResourcePattern, wanted: frozenset[AccessControlEntry], version: int
    ):
        """The conditional write that makes the pattern's znode hold ``wanted``, sent."""
        path = _path(pattern)
        if not wanted:
            return self.zk.delete_async(path, version=version)
        if version < 0:
            return self.zk.create_async(path, encode_acls(wanted), makepath=True)
        return self.zk.set_async(path, encode_acls(wanted), version=version)

    def changes(self, changes_path: str, watch: Callable | None = None) -> list[str]:
        """The notifications under ``changes_path``, oldest first."""
        self.zk.ensure_path(changes_path)
        children = self.zk.get_children(changes_path, watch=watch)
        return sorted(c for c in children if c.startswith(CHANGE_PREFIX))

    def changed_patterns(self, changes_path: str, names: list[str]) -> list[ResourcePattern]:
        """The patterns the notifications ``names`` name, each once, read in one
        pipelined round trip (thousands come at once when a tool adds as many ACLs); a
        notification gone or unreadable is skipped with a warning."""
        reads = [(name, self.zk.get_async(f"{changes_path}/{name}")) for name in names]
        patterns: dict[ResourcePattern, None] = {}
        for name, read in reads:
            try:
                data, _ = read.get()
                patterns[_decode_change(changes_path, data)] = None
            except (NoNodeError, ValueError, KeyError) as error:
                logger.warning(
                    "ACL change notification %s/%s skipped: %r", changes_path, name, error
                )
        return list(patterns)

    def purge_changes(self, changes_path: str, names: list[str], now_ms: int) -> None:
        """Delete the notifications among ``names`` (oldest first) older than Kafka's
        expiration; stops at the first one still young."""
        for name in names:
            path = f"{changes_path}/{name}"
            stat = self.zk.exists(path)
            if stat is None:
                continue
            if now_ms - stat.ctime <= ACL_CHANGE_EXPIRATION_MS:
                return
            with contextlib.suppress(NoNodeError):
                self.zk.delete(path)


# A pattern's entries are logged when it changes, up to this many (else their count).
LOGGED_ENTRIES = 20


class AclChangeFollower:
    """Keeps ``authorizer``'s cache equal to the store: :meth:`load` at start, then
    :meth:`follow` applies each pattern a notification names. Made on the event loop."""

    def __init__(self, store: AclStore, authorizer: AclAuthorizer):
        self.store = store
        self.authorizer = authorizer
        self._last = {LITERAL_CHANGES: -1, EXTENDED_CHANGES: -1}
        self._changed = asyncio.Event()
        self._loop = asyncio.get_running_loop()

    async def load(self) -> None:
        """Every ACL into the cache; the notifications already made are covered by it.
        Arms the watches (:meth:`follow` serves them)."""
        await asyncio.to_thread(self.store.ensure_paths)
        for path in self._last:
            names = await asyncio.to_thread(self.store.changes, path)
            if names:
                self._last[path] = _change_number(names[-1])
        acls = await asyncio.to_thread(self.store.load_all)
        for pattern, entries in acls.items():
            self.authorizer.set_acls(pattern, entries)
        self.read_again()
        logger.info("ACL authorizer: %d resource patterns loaded", len(acls))

    def read_again(self) -> None:
        """Read the notifications (again) and arm their watches: at start, and on a new
        ZooKeeper session (which has none of the old one's watches)."""
        self._changed.set()

    async def follow(self) -> None:
        """Forever: apply each change announced."""
        while True:
            await self._changed.wait()
            self._changed.clear()
            try:
                for path in self._last:
                    await self._process(path)
            except ConnectionLoss:  # kazoo holds the next try until it has reconnected
                self._changed.set()
            except SESSION_ERRORS:
                logger.warning("following ACL changes: ZooKeeper session lost until a new one")
            except Exception:
                logger.exception("processing ACL changes failed; retrying")
                await asyncio.sleep(RETRY_AFTER_FAILURE_S)
                self._changed.set()

    def _watch(self, _event=None) -> None:
        """kazoo's thread: hand over to the event loop, nothing else."""
        with contextlib.suppress(RuntimeError):  # a closed loop: the broker has stopped
            self._loop.call_soon_threadsafe(self._changed.set)

    async def _process(self, changes_path: str) -> None:
        store = self.store
        names = await asyncio.to_thread(store.changes, changes_path, self._watch)
        fresh = {}
        for name in names:
            try:
                number = _change_number(name)
            except ValueError:
                continue
            if number > self._last[changes_path]:
                fresh[name] = number
        if fresh:
            patterns = await asyncio.to_thread(store.changed_patterns, changes_path, list(fresh))
            self.apply(await asyncio.to_thread(store.read_all, patterns))
            self._last[changes_path] = max(fresh.values())
        if names:
            now_ms = int(time.time() * 1000)
            await asyncio.to_thread(store.purge_changes, changes_path, names, now_ms)

    def apply(self, read: dict[ResourcePattern, frozenset[AccessControlEntry] | Exception]) -> None:
        """The patterns' entries read again into the cache (one whose znode does not
        parse is logged and left as it was)."""
        for pattern, entries in read.items():
            if isinstance(entries, Exception):
                logger.error("ignoring the ACLs of %s: %r", pattern, entries)
                continue
            self.authorizer.set_acls(pattern, entries)
            if len(entries) <= LOGGED_ENTRIES:
                logger.info("ACLs of %s now: %s", pattern, ", ".join(map(str, sorted(entries))))
            else:
                logger.info("ACLs of %s now: %d entries", pattern, len(entries))
