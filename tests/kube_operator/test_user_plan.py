"""The User's plan: the brokers' ACLs, quotas and SCRAM credential made exactly the
spec's, drift reverted, and everything removed with the User."""

from __future__ import annotations

import dataclasses

import pytest

from tidelog.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from tidelog_operator.user.plan import Actual, UserPlan, plan_user
from tidelog_operator.user.spec import TLS, UserSpec


def acl(name: str, operation: AclOperation = AclOperation.READ) -> AclBinding:
    return AclBinding(
        ResourcePattern(ResourceType.TOPIC, name, PatternType.LITERAL),
        AccessControlEntry("User:alice", "*", operation, AclPermissionType.ALLOW),
    )


ORDERS, PAYMENTS, AUDIT = acl("orders"), acl("payments"), acl("audit")
QUOTAS = {"producer_byte_rate": 1048576.0, "request_percentage": 50.0}
ALICE = UserSpec(
    name="alice",
    namespace="apps",
    cluster="events",
    authentication="scram-sha-512",
    acls=(ORDERS, PAYMENTS),
    quotas=QUOTAS,
)
IN_SYNC = Actual(acls=frozenset({ORDERS, PAYMENTS}), quotas=QUOTAS, scram_credential=True)


def test_a_new_user_gets_its_credential_acls_and_quotas():
    plan = plan_user(ALICE, Actual())
    assert plan == UserPlan(
        create_acls=(ORDERS, PAYMENTS),
        set_quotas=QUOTAS,
        upsert_scram=True,
    )
    assert plan.describe() == (
        "SCRAM-SHA-512 credential set; 2 ACLs created; "
        "quotas set: producer_byte_rate, request_percentage"
    )


def test_a_user_as_the_spec_says_needs_nothing():
    plan = plan_user(ALICE, IN_SYNC)
    assert plan.nothing_to_do and plan == UserPlan()
    assert plan.describe() == "nothing"


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        (  # an ACL added with kafka-acls.sh, one removed
            dataclasses.replace(IN_SYNC, acls=frozenset({ORDERS, AUDIT})),
            UserPlan(create_acls=(PAYMENTS,), delete_acls=(AUDIT,)),
        ),
        (  # the same resource with another operation is another binding
            dataclasses.replace(
                IN_SYNC, acls=frozenset({ORDERS, acl("payments", AclOperation.ALL)})
            ),
            UserPlan(create_acls=(PAYMENTS,), delete_acls=(acl("payments", AclOperation.ALL),)),
        ),
        (  # a quota changed, another added with kafka-configs.sh
            dataclasses.replace(
                IN_SYNC,
                quotas={
                    "producer_byte_rate": 1.0,
                    "request_percentage": 50.0,
                    "consumer_byte_rate": 10.0,
                },
            ),
            UserPlan(
                set_quotas={"producer_byte_rate": 1048576.0},
                remove_quotas=("consumer_byte_rate",),
            ),
        ),
        (  # the credential deleted behind the operator's back
            dataclasses.replace(IN_SYNC, scram_credential=False),
            UserPlan(upsert_scram=True),
        ),
        (  # a new password (the referenced Secret changed, or the user's Secret is gone)
            dataclasses.replace(IN_SYNC, password_changed=True),
            UserPlan(upsert_scram=True),
        ),
    ],
    ids=["acls", "operation", "quotas", "credential-deleted", "password-changed"],
)
def test_drift_is_reverted_to_exactly_the_spec(actual, expected):
    assert plan_user(ALICE, actual) == expected


def test_a_tls_user_has_no_scram_credential():
    bob = dataclasses.replace(ALICE, authentication=TLS)
    assert plan_user(bob, IN_SYNC) == UserPlan(delete_scram=True)
    assert plan_user(bob, dataclasses.replace(IN_SYNC, scram_credential=False)).nothing_to_do
    changed = dataclasses.replace(IN_SYNC, scram_credential=False, password_changed=True)
    assert plan_user(bob, changed).nothing_to_do


def test_a_spec_without_acls_or_quotas_removes_them_all():
    bare = dataclasses.replace(ALICE, acls=(), quotas={})
    assert plan_user(bare, IN_SYNC) == UserPlan(
        delete_acls=(ORDERS, PAYMENTS),
        remove_quotas=("producer_byte_rate", "request_percentage"),
    )


def test_a_deleted_user_leaves_nothing_behind():
    plan = plan_user(None, IN_SYNC)
    assert plan == UserPlan(
        delete_acls=(ORDERS, PAYMENTS),
        remove_quotas=("producer_byte_rate", "request_percentage"),
        delete_scram=True,
    )
    assert plan.describe() == (
        "SCRAM-SHA-512 credential deleted; 2 ACLs deleted; "
        "quotas removed: producer_byte_rate, request_percentage"
    )
    assert plan_user(None, Actual()).nothing_to_do
