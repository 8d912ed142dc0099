"""DescribeClientQuotas and AlterClientQuotas (v0-v1), as a ZooKeeper-mode Kafka broker
answers them (``ZkAdminManager``): quotas live in ``/config/users/<user>``,
``/config/clients/<client-id>`` and ``/config/users/<user>/clients/<client-id>`` (names
sanitized, ``<default>`` for a default), beside other keys of the same znode (a user's
SCRAM credentials), which an alteration reads first and keeps. Every broker learns of a
change through the ``/config/changes`` notification the write makes.

Entity types are Kafka's ``user`` and ``client-id``; a null name is the default entity.
Kafka's ``ip`` entities (``connection_creation_rate``) are not served: an alteration of
one is refused with INVALID_REQUEST, a filter on them matches nothing.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal

from tidelog.controller.zk_data import DEFAULT_ENTITY
from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode
from tidelog.security.quotas import QUOTA_VALUE_TYPES
from tidelog.server.entity_configs import QuotaEntity, entity_path, read_all_entities

__all__ = ["handle_alter_client_quotas", "handle_describe_client_quotas"]

DescribeClientQuotasResponse = response_class(ApiKey.DESCRIBE_CLIENT_QUOTAS)
AlterClientQuotasResponse = response_class(ApiKey.ALTER_CLIENT_QUOTAS)

USER = "user"
CLIENT_ID = "client-id"
IP = "ip"
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2
# A long quota's value may differ from an integer by this much (Kafka's epsilon).
EPSILON = 1e-6


class QuotaRequestError(Exception):
    """A filter or an entry Kafka refuses: the error code and message to answer."""

    def __init__(self, message: str, code: ErrorCode = ErrorCode.INVALID_REQUEST):
        super().__init__(message)
        self.code = code


def java_double(value: float) -> str:
    """``value`` as Java's ``Double.toString`` writes it (Kafka stores a double quota
    so): ``200.0``, ``0.5``, ``1.0E7``, ``1.0E-4``."""
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(float(value))
    sign, digits, exponent = Decimal(repr(float(value))).normalize().as_tuple()
    mantissa = f"{digits[0]}.{''.join(map(str, digits[1:])) or '0'}"
    return f"{'-' if sign else ''}{mantissa}E{exponent + len(digits) - 1}"


def stored_value(key: str, value: float) -> str:
    """A quota's value as Kafka writes it in the entity's znode; QuotaRequestError for a
    key that is no quota or a long quota that is not an integer."""
    kind = QUOTA_VALUE_TYPES.get(key)
    if kind is None:
        raise QuotaRequestError(f"Invalid configuration key {key}")
    if kind == "double":
        return java_double(value)
    integral = int(value + EPSILON)
    if abs(integral - value) > EPSILON:
        raise QuotaRequestError(f"Configuration {key} must be a LONG value")
    return str(integral)


# -- DescribeClientQuotas -------------------------------------------------------------------


def _filter_components(components) -> dict[str, object]:
    """Each filtered entity type → the name it must have (``<default>`` for the
    default), or None for any name; QuotaRequestError as Kafka refuses a filter."""
    wanted: dict[str, object] = {}
    for component in components:
        entity_type = component.entity_type
        if entity_type not in (USER, CLIENT_ID, IP):
            if not entity_type:
                raise QuotaRequestError("Unexpected empty filter component entity type")
            raise QuotaRequestError(
                f"Custom entity type '{entity_type}' not supported", ErrorCode.UNSUPPORTED_VERSION
            )
        if entity_type in wanted:
            raise QuotaRequestError(f"Duplicate {entity_type} filter component entity type")
        if component.match_type == MATCH_EXACT and component.match is not None:
            wanted[entity_type] = component.match
        elif component.match_type == MATCH_DEFAULT:
            wanted[entity_type] = DEFAULT_ENTITY
        elif component.match_type == MATCH_SPECIFIED:
            wanted[entity_type] = None
        else:
            raise QuotaRequestError(f"Unexpected match type: {component.match_type}")
    if IP in wanted and (USER in wanted or CLIENT_ID in wanted):
        raise QuotaRequestError(
            "Invalid entity filter component combination, IP filter component should not "
            "be used with user or clientId filter component."
        )
    return wanted


def _matches(wanted: dict[str, object], entity_type: str, name: str | None, strict: bool) -> bool:
    """Kafka's ``matches``: a filtered type needs that name (or any name); an unfiltered
    type matches an entity without that part, or any entity unless ``strict``."""
    if entity_type in wanted:
        match = wanted[entity_type]
        return name is not None and (match is None or name == match)
    return name is None or not strict


def _response_entity(entity: QuotaEntity) -> list:
    user, client = entity
    return [
        DescribeClientQuotasResponse.EntityData(
            entity_type=entity_type, entity_name=None if name == DEFAULT_ENTITY else name
        )
        for entity_type, name in ((USER, user), (CLIENT_ID, client))
        if name is not None
    ]


def _quota_values(config: dict[str, str]) -> list:
    values = []
    for key, value in sorted(config.items()):
        if key in QUOTA_VALUE_TYPES:
            try:
                values.append(DescribeClientQuotasResponse.ValueData(key=key, value=float(value)))
            except ValueError:
                continue
    return values


async def handle_describe_client_quotas(broker, header, request, context):
    try:
        wanted = _filter_components(request.components)
    except QuotaRequestError as error:
        return DescribeClientQuotasResponse(
            error_code=error.code, error_message=str(error), entries=None
        )
    entries = []
    if IP not in wanted:
        # read from ZooKeeper, not the cache: an alteration just made is seen at once
        entities = await asyncio.to_thread(read_all_entities, broker.zk)
        for entity, config in sorted(entities.items(), key=lambda item: str(item[0])):
            user, client = entity
            values = _quota_values(config)
            if (
                values
                and _matches(wanted, USER, user, request.strict)
                and _matches(wanted, CLIENT_ID, client, request.strict)
            ):
                entries.append(
                    DescribeClientQuotasResponse.EntryData(
                        entity=_response_entity(entity), values=values
                    )
                )
    return DescribeClientQuotasResponse(error_code=ErrorCode.NONE, entries=entries)


# -- AlterClientQuotas ----------------------------------------------------------------------


def _entity_of(entity_data) -> QuotaEntity:
    """(user, client id) of a request's entity, ``<default>`` for a null name (a type
    named twice: the last one counts, as in Kafka's map); QuotaRequestError as Kafka."""
    names = {data.entity_type: data.entity_name for data in entity_data}
    if not names:
        raise QuotaRequestError("Invalid empty client quota entity")
    for entity_type, name in names.items():
        if entity_type == IP:
            raise QuotaRequestError(
                "ip quotas (connection_creation_rate) are not served by this broker"
            )
        if entity_type not in (USER, CLIENT_ID):
            raise QuotaRequestError(f"Unhandled client quota entity type: {entity_type}")
        if name is not None and not name:
            raise QuotaRequestError(f"Empty {entity_type} not supported")
    user, client = (
        (DEFAULT_ENTITY if names[t] is None else names[t]) if t in names else None
        for t in (USER, CLIENT_ID)
    )
    return user, client


async def _alter_entry(broker, entry, validate_only: bool) -> None:
    entity_type, name = entity_path(*_entity_of(entry.entity))
    changes: dict[str, str | None] = {}
    for op in entry.ops:
        if not op.remove:
            changes[op.key] = stored_value(op.key, op.value)
        elif op.key in QUOTA_VALUE_TYPES:
            changes[op.key] = None
        else:
            raise QuotaRequestError(f"Invalid configuration key {op.key}")
    if validate_only:
        return
    config = await asyncio.to_thread(broker.zk.entity_config, entity_type, name)
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    await asyncio.to_thread(broker.zk.set_entity_config, entity_type, name, config)


async def handle_alter_client_quotas(broker, header, request, context):
    answers = []
    for entry in request.entries:
        code, message = ErrorCode.NONE, None
        try:
            await _alter_entry(broker, entry, request.validate_only)
        except QuotaRequestError as error:
            code, message = error.code, str(error)
        answers.append(
            AlterClientQuotasResponse.EntryData(
                error_code=code,
                error_message=message,
                entity=[
                    AlterClientQuotasResponse.EntityData(
                        entity_type=data.entity_type, entity_name=data.entity_name
                    )
                    for data in entry.entity
                ],
            )
        )
    return AlterClientQuotasResponse(entries=answers)
