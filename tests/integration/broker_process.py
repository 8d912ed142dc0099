"""Broker processes for the integration tests (the same class ``make run`` uses)."""

from tidelog.server.process import TIDELOG_SERVER, BrokerProcess, free_port

__all__ = ["TIDELOG_SERVER", "BrokerProcess", "free_port"]
