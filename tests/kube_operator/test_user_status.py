"""The User's status: Ready with its reasons, username and secret; a pass that changes
nothing yields the same status (no write), and Ready keeps its transition time while it
holds."""

from __future__ import annotations

from tidelog.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePattern,
    ResourceType,
)
from tidelog_operator.user.spec import TLS, SecretKeyRef, UserSpec
from tidelog_operator.user.status import (
    cluster_not_found,
    cluster_not_ready,
    invalid_password,
    password_secret_not_found,
    secret_not_owned,
    sync_failed,
    user_status,
)

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"
READ = AclBinding(
    ResourcePattern(ResourceType.TOPIC, "orders"),
    AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW),
)
REF = SecretKeyRef("alice-password", "pw")
ALICE = UserSpec(
    name="alice",
    namespace="apps",
    cluster="events",
    authentication="scram-sha-512",
    password_ref=REF,
    acls=(READ,),
    quotas={"producer_byte_rate": 1048576.0, "controller_mutation_rate": 0.5},
)


def ready(status: dict) -> dict:
    (condition,) = [c for c in status["conditions"] if c["type"] == "Ready"]
    return condition


def test_a_synced_user():
    status = user_status(ALICE, None, generation=3, now=T0)
    assert status["observedGeneration"] == 3
    assert (status["username"], status["secret"]) == ("alice", "alice")
    assert ready(status) == {
        "type": "Ready",
        "status": "True",
        "reason": "Synced",
        "message": "User:alice: scram-sha-512, 1 ACLs, quotas "
        "controller_mutation_rate=0.5, producer_byte_rate=1048576; "
        "credentials in Secret alice",
        "lastTransitionTime": T0,
        "observedGeneration": 3,
    }
    assert user_status(ALICE, status, generation=3, now=T1) == status


def test_a_problem_makes_ready_false_and_keeps_the_secret_as_it_was():
    synced = user_status(ALICE, None, generation=1, now=T0)
    problem = sync_failed(ALICE, "creating ACLs", "timed out")
    failed = user_status(ALICE, synced, problem, generation=2, now=T1)
    assert ready(failed)["status"] == "False" and ready(failed)["reason"] == "SyncFailed"
    assert ready(failed)["message"] == "User:alice: creating ACLs: timed out"
    assert ready(failed)["lastTransitionTime"] == T1 and failed["secret"] == "alice"
    fresh = user_status(ALICE, None, cluster_not_found(ALICE), generation=1, now=T0)
    assert "secret" not in fresh and fresh["username"] == "alice"
    assert ready(fresh)["message"] == "Cluster events not found in namespace apps"


def test_each_problem_has_its_reason_and_names_what_is_missing():
    bob = UserSpec(name="bob", namespace="apps", cluster="events", authentication=TLS)
    problems = [
        (cluster_not_ready(bob, "its clients CA is not made yet"), "ClusterNotReady"),
        (password_secret_not_found(REF, secret_exists=False), "PasswordSecretNotFound"),
        (password_secret_not_found(REF, secret_exists=True), "PasswordSecretNotFound"),
        (invalid_password(REF, "the password is empty"), "InvalidPassword"),
        (secret_not_owned(bob), "SecretNotOwned"),
    ]
    assert [p.reason for p, _ in problems] == [reason for _, reason in problems]
    assert [p.message for p, _ in problems] == [
        "Cluster events: its clients CA is not made yet",
        "password Secret alice-password not found",
        "password Secret alice-password has no key pw",
        "password Secret alice-password, key pw: the password is empty",
        "Secret bob exists and was not written for this User; delete it or give the User "
        "another name",
    ]
