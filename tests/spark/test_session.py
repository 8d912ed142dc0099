"""Where the Kafka connector's jars come from, and the error when they are missing."""

from __future__ import annotations

import pyspark
import pytest

from tidelog_spark.session import SparkSetupError, connector_libs


def test_the_connector_comes_from_the_directory_named_in_the_environment(tmp_path, monkeypatch):
    for name in (f"spark-sql-kafka-0-10_2.13-{pyspark.__version__}.jar", "kafka-clients-3.9.1.jar"):
        (tmp_path / name).write_bytes(b"")
    monkeypatch.setenv("TIDELOG_SPARK_LIBS", str(tmp_path))
    assert [p.name for p in connector_libs()] == [
        "kafka-clients-3.9.1.jar",
        f"spark-sql-kafka-0-10_2.13-{pyspark.__version__}.jar",
    ]


def test_missing_jars_say_how_to_get_them(tmp_path, monkeypatch):
    monkeypatch.setenv("TIDELOG_SPARK_LIBS", str(tmp_path / "nowhere"))
    with pytest.raises(SparkSetupError, match=r"run `make spark-libs`"):
        connector_libs()
