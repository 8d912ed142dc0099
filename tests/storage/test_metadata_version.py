"""message.format.version accepts exactly what Kafka 3.9 accepts.

The expected column was produced by running Kafka 3.9.1's own
``MetadataVersion.fromVersionString`` (kafka-server-common-3.9.1.jar) on each input:
the version it answered, or None where it threw IllegalArgumentException. Three of the
inputs were also checked through Kafka's ``LogConfig.validate`` (which trims first)."""

import pytest

from tidelog.storage.config import LogConfig, LogConfigError
from tidelog.storage.metadata_version import METADATA_VERSIONS, parse_metadata_version

KAFKA_3_9 = [
    ("0.10.0.0", "0.10.0-IV1"),
    ("0.10.0", "0.10.0-IV1"),
    ("0.10.0-IV1", "0.10.0-IV1"),
    ("0.10.0-IV0", "0.10.0-IV0"),
    ("0.10", None),
    ("0.8.0", "0.8.0"),
    ("0.8.2", "0.8.2"),
    ("0.8.2.2", "0.8.2"),
    ("0.9.0.1", "0.9.0"),
    ("0.11.0.3", "0.11.0-IV2"),
    ("1.0", "1.0-IV0"),
    ("1.0.0", "1.0-IV0"),
    ("1.1.1", "1.1-IV0"),
    ("2.8", "2.8-IV1"),
    ("2.8.2", "2.8-IV1"),
    ("2.8-IV0", "2.8-IV0"),
    ("3.0", "3.0-IV1"),
    ("3.0-IV1", "3.0-IV1"),
    ("3.0.1", "3.0-IV1"),
    ("3.0.0.0", "3.0-IV1"),
    ("3.9", "3.9-IV0"),
    ("3.9.0", "3.9-IV0"),
    ("3.9.1", "3.9-IV0"),
    ("3.9-IV1", None),
    ("3.10", None),
    ("4.0", None),
    ("4.0-IV0", "4.0-IV0"),
    ("3.0.x", "3.0-IV1"),
    ("3.0.", None),
    ("3.0..1", "3.0-IV1"),
    ("3.0-IV1.5", "3.0-IV1"),
    ("0.10.0.0-IV1", "0.10.0-IV1"),
    ("0.10.0.x", "0.10.0-IV1"),
    ("0.10.0.", None),
    ("0.10.1.1", "0.10.1-IV2"),
    ("0.10.2-IV0.1", "0.10.2-IV0"),
    ("2.1.0-IV2", "2.1-IV2"),
    ("3.3.2", "3.3-IV3"),
    ("3.7-IV4", "3.7-IV4"),
    ("3.7-IV5", None),
    ("3.8.1-IV0", "3.8-IV0"),
    ("3.0.-1", "3.0-IV1"),
    ("3.0.1a", "3.0-IV1"),
    (" 3.0", None),
    ("3.0 ", None),
    ("", None),
    ("3", None),
    ("0", None),
    ("abc", None),
    ("3.0-iv1", None),
]


@pytest.mark.parametrize(("text", "version"), KAFKA_3_9)
def test_the_parse_answers_as_kafka_3_9_does(text, version):
    if version is None:
        with pytest.raises(ValueError, match="is not a valid version"):
            parse_metadata_version(text)
    else:
        assert parse_metadata_version(text) == version


def test_every_version_of_kafka_3_9_names_itself():
    assert len(METADATA_VERSIONS) == 57  # MetadataVersion.values() of 3.9.1
    assert METADATA_VERSIONS[0] == "0.8.0" and METADATA_VERSIONS[-1] == "4.0-IV1"
    for name in METADATA_VERSIONS:
        assert parse_metadata_version(name) == name


# Kafka 3.9.1's LogConfig.validate on each (it trims the value first, as ConfigDef does).
TOPIC_CONFIG = [
    ("0.10.0.0", True),
    (" 3.0 ", True),
    ("2.1.0-IV2", True),
    ("4.0-IV1", True),
    ("3.0..1", True),
    ("3.0.", False),
    ("0.10", False),
]


@pytest.mark.parametrize(("text", "accepted"), TOPIC_CONFIG)
def test_the_topic_config_takes_what_kafka_takes(text, accepted):
    properties = {"message.format.version": text}
    if accepted:  # kept as given (trimmed): DescribeConfigs shows it unchanged
        assert LogConfig.from_properties(properties).message_format_version == text.strip()
    else:
        with pytest.raises(LogConfigError, match=f"Invalid value {text} for configuration"):
            LogConfig.from_properties(properties)
