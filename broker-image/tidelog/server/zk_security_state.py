"""The broker's security state that lives in ZooKeeper, as Kafka keeps it: the ACL
authorizer's ACLs (``authorizer.class.name``), the delegation tokens
(``delegation.token.secret.key``) and the client quotas that users' and clients' configs
set. Each is loaded before any request is served, followed from a background task
through its change notifications, and read again on a new ZooKeeper session (whose
watches are new); the broker's composition root (:mod:`.broker`) only wires them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass

from tidelog.security.acl_store import AclChangeFollower, AclStore
from tidelog.security.authorizer import AclAuthorizer, parse_super_users
from tidelog.security.delegation_tokens import (
    DelegationTokenCache,
    TokenChangeFollower,
    TokenZnodes,
)
from tidelog.security.quotas import ClientQuotas, QuotaWindows
from tidelog.server.entity_configs import EntityConfigs
from tidelog.server.request_quotas import RequestQuotas

__all__ = ["ZkSecurityState", "request_quotas"]

# The broker's runner of blocking work every interval: (interval ms, work, arguments).
Every = Callable[..., Coroutine]


@dataclass
class ZkSecurityState:
    """The authorizer (None: every request is served) and the delegation tokens (None:
    no secret, no tokens), with the followers of their changes."""

    authorizer: AclAuthorizer | None = None
    acl_changes: AclChangeFollower | None = None
    delegation_tokens: DelegationTokenCache | None = None
    token_changes: TokenChangeFollower | None = None

    @classmethod
    async def load(cls, config, kazoo) -> ZkSecurityState:
        """What ``config`` turns on, loaded from ZooKeeper (``kazoo``, the session's
        client)."""
        state = cls()
        if config["authorizer.class.name"]:
            state.authorizer = AclAuthorizer(
                parse_super_users(config["super.users"]),
                config["allow.everyone.if.no.acl.found"],
            )
            state.acl_changes = AclChangeFollower(AclStore(kazoo), state.authorizer)
            await state.acl_changes.load()
        secret = config["delegation.token.secret.key"] or config["delegation.token.master.key"]
        if secret:
            state.delegation_tokens = DelegationTokenCache(secret)
            state.token_changes = TokenChangeFollower(TokenZnodes(kazoo), state.delegation_tokens)
            await state.token_changes.load()
        return state

    def token_login(self, token_id: str, mechanism: str):
        """A SCRAM login with a delegation token: (credential, owner) or None."""
        if self.delegation_tokens is None:
            return None
        return self.delegation_tokens.scram_login(token_id, mechanism)

    def follow(self, config, every: Every) -> list[asyncio.Task]:
        """The background tasks that follow the changes (and delete expired tokens
        every ``delegation.token.expiry.check.interval.ms``)."""
        tasks = []
        if self.acl_changes is not None:
            tasks.append(asyncio.create_task(self.acl_changes.follow(), name="acl-changes"))
        if self.token_changes is not None:
            tasks.append(
                asyncio.create_task(self.token_changes.follow(), name="delegation-token-changes")
            )
            tasks.append(
                asyncio.create_task(
                    every(
                        config["delegation.token.expiry.check.interval.ms"],
                        self.token_changes.znodes.delete_all,
                        arguments=lambda: (self.delegation_tokens.expired(),),
                    ),
                    name="delegation-token-expiry",
                )
            )
        return tasks

    def read_again(self) -> None:
        """After a new ZooKeeper session: read everything again, arming new watches."""
        if self.acl_changes is not None:
            self.acl_changes.read_again()
        if self.token_changes is not None:
            self.token_changes.read_again()


def request_quotas(config, entity_configs: EntityConfigs) -> RequestQuotas:
    """The client quotas (producer_byte_rate, ...) read from the users' and clients'
    configs, kept on the event loop's clock, for the dispatcher to consult."""
    clock = asyncio.get_running_loop().time
    client_quotas = ClientQuotas(
        entity_configs,
        QuotaWindows(config["quota.window.num"], config["quota.window.size.seconds"] * 1000),
        QuotaWindows(
            config["controller.quota.window.num"],
            config["controller.quota.window.size.seconds"] * 1000,
        ),
        clock=clock,
    )
    entity_configs.subscribe(client_quotas.configs_changed)
    return RequestQuotas(client_quotas, clock)
