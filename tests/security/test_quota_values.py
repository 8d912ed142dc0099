"""Quota values as AlterClientQuotas stores them in ZooKeeper: a long quota as an
integer (refused when the double it came as is not one), a double one as Java's
``Double.toString`` writes it, as Kafka's ZooKeeper-mode broker does."""

import pytest

from tidelog.server.handlers.client_quotas import QuotaRequestError, java_double, stored_value


@pytest.mark.parametrize(
    "value, text",
    [
        (200.0, "200.0"),
        (0.5, "0.5"),
        (12.5, "12.5"),
        (0.0, "0.0"),
        (0.001, "0.001"),
        (9999999.0, "9999999.0"),
        (1e7, "1.0E7"),
        (12345678.9, "1.23456789E7"),
        (1e-4, "1.0E-4"),
        (-2.5e-5, "-2.5E-5"),
    ],
)
def test_doubles_are_written_as_java_writes_them(value, text):
    assert java_double(value) == text


def test_each_quota_is_stored_as_its_type():
    assert stored_value("producer_byte_rate", 1024.0) == "1024"
    assert stored_value("consumer_byte_rate", 2047.9999999) == "2048"
    assert stored_value("request_percentage", 50) == "50.0"
    assert stored_value("controller_mutation_rate", 0.5) == "0.5"
    with pytest.raises(QuotaRequestError, match="Configuration producer_byte_rate must be a LONG"):
        stored_value("producer_byte_rate", 1.5)
    with pytest.raises(QuotaRequestError, match="Invalid configuration key connection_creation"):
        stored_value("connection_creation_rate", 1.0)
