"""The admin library: a small synchronous Kafka protocol client for tools, the operator
and tests. It depends on ``tidelog.protocol`` only."""

from .client import AdminClient, AdminError

__all__ = ["AdminClient", "AdminError"]
