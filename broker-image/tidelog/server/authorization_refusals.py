"""The error response to a request refused whole by the authorizer, shaped as Kafka's
``AbstractRequest.getErrorResponse`` shapes it: the top-level error code where the
response has one, and one result with the error for each item of the request where the
response answers per item (ACL creations and deletion filters, partitions, users,
quota entities)."""

from __future__ import annotations

from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode

__all__ = ["refusal"]


def _alter_replica_log_dirs(cls, request, code):
    topics: dict[str, set[int]] = {}
    for directory in request.dirs:
        for topic in directory.topics:
            topics.setdefault(topic.name, set()).update(topic.partitions)
    return cls(
        results=[
            cls.AlterReplicaLogDirTopicResult(
                topic_name=name,
                partitions=[
                    cls.AlterReplicaLogDirPartitionResult(partition_index=p, error_code=code)
                    for p in sorted(partitions)
                ],
            )
            for name, partitions in topics.items()
        ]
    )


def _elect_leaders(cls, request, code):
    return cls(
        error_code=code,
        replica_election_results=[
            cls.ReplicaElectionResult(
                topic=topic.topic,
                partition_result=[
                    cls.PartitionResult(partition_id=p, error_code=code, error_message=None)
                    for p in topic.partitions
                ],
            )
            for topic in request.topic_partitions or []
        ],
    )


def _alter_partition_reassignments(cls, request, code):
    return cls(
        error_code=code,
        error_message=code.message,
        responses=[
            cls.ReassignableTopicResponse(
                name=topic.name,
                partitions=[
                    cls.ReassignablePartitionResponse(
                        partition_index=p.partition_index, error_code=code, error_message=None
                    )
                    for p in topic.partitions
                ],
            )
            for topic in request.topics
        ],
    )


def _create_acls(cls, request, code):
    return cls(
        results=[
            cls.AclCreationResult(error_code=code, error_message=code.message)
            for _ in request.creations
        ]
    )


def _delete_acls(cls, request, code):
    return cls(
        filter_results=[
            cls.DeleteAclsFilterResult(
                error_code=code, error_message=code.message, matching_acls=[]
            )
            for _ in request.filters
        ]
    )


def _alter_client_quotas(cls, request, code):
    return cls(
        entries=[
            cls.EntryData(
                error_code=code,
                error_message=code.message,
                entity=[
                    cls.EntityData(entity_type=e.entity_type, entity_name=e.entity_name)
                    for e in entry.entity
                ],
            )
            for entry in request.entries
        ]
    )


def _alter_user_scram_credentials(cls, request, code):
    users = dict.fromkeys(c.name for c in (*request.deletions, *request.upsertions))
    return cls(
        results=[
            cls.AlterUserScramCredentialsResult(
                user=user, error_code=code, error_message=code.message
            )
            for user in users
        ]
    )


_PER_ITEM = {
    ApiKey.ALTER_REPLICA_LOG_DIRS: _alter_replica_log_dirs,
    ApiKey.ELECT_LEADERS: _elect_leaders,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: _alter_partition_reassignments,
    ApiKey.CREATE_ACLS: _create_acls,
    ApiKey.DELETE_ACLS: _delete_acls,
    ApiKey.ALTER_CLIENT_QUOTAS: _alter_client_quotas,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _alter_user_scram_credentials,
}


def refusal(header, request, code: ErrorCode):
    """The response refusing ``request`` whole with ``code``."""
    api_key = ApiKey(header.request_api_key)
    cls = response_class(api_key)
    per_item = _PER_ITEM.get(api_key)
    if per_item is not None:
        return per_item(cls, request, code)
    if "error_code" not in cls._field_set:
        raise AssertionError(f"{api_key.name}: no refusal without an error code; add one")
    fields = {"error_code": code}
    if "error_message" in cls._field_set:
        fields["error_message"] = code.message
    return cls(**fields)
