"""Pipelined OffsetCommits under the ACL authorizer: a burst is served as one only when
every commit in it is allowed (Read on the group and on each topic); otherwise each
request is answered alone, through the authorization table, with Kafka's errors."""

from __future__ import annotations

from server.test_offset_commit_answers import CONTEXT, answered, commit_frame, run
from tidelog.protocol.errors import ErrorCode
from tidelog.security.acls import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    ResourcePattern,
    ResourceType,
)
from tidelog.security.authorizer import AclAuthorizer

READ = AccessControlEntry("User:ANONYMOUS", "*", AclOperation.READ, AclPermissionType.ALLOW)
GROUP = ResourcePattern(ResourceType.GROUP, "group")
TOPIC = ResourcePattern(ResourceType.TOPIC, "work")


def test_a_burst_is_checked_like_each_commit(tmp_path):
    async def scenario(dispatcher) -> None:
        authorizer = dispatcher.broker.authorizer = AclAuthorizer()
        frames = [commit_frame(i, [0, 1]) for i in (1, 2)]
        assert await dispatcher.handle_burst(frames, CONTEXT) is None
        refused = [
            (0, ErrorCode.GROUP_AUTHORIZATION_FAILED),
            (1, ErrorCode.GROUP_AUTHORIZATION_FAILED),
        ]
        assert answered(await dispatcher(frames[0], CONTEXT)) == (1, refused)
        authorizer.set_acls(GROUP, [READ])
        assert await dispatcher.handle_burst(frames, CONTEXT) is None
        refused = [
            (0, ErrorCode.TOPIC_AUTHORIZATION_FAILED),
            (1, ErrorCode.TOPIC_AUTHORIZATION_FAILED),
        ]
        assert answered(await dispatcher(frames[1], CONTEXT)) == (2, refused)
        authorizer.set_acls(TOPIC, [READ])
        burst = await dispatcher.handle_burst(frames, CONTEXT)
        stored = [(0, ErrorCode.NONE), (1, ErrorCode.NONE)]
        assert [answered(parts) for parts in burst] == [(1, stored), (2, stored)]

    run(tmp_path, scenario)
