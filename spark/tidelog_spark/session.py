"""A SparkSession that can read and write tidelog with ``format("kafka")``.

Spark's Kafka connector (``spark-sql-kafka-0-10`` and the few jars it needs beyond
PySpark's own) is fetched from Maven Central by ``make spark-libs`` into
``<cache>/tidelog/spark-<version>/libs``, for the version of the installed PySpark, and
put on the classpath here through ``spark.jars``: nothing is resolved at run time
(no ``spark.jars.packages``). ``TIDELOG_SPARK_LIBS`` names another directory. The Spark
image has the connector among Spark's own jars, where it needs no configuration.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pyspark
from pyspark.sql import SparkSession

LIBS_ENV_VAR = "TIDELOG_SPARK_LIBS"
CONNECTOR_JAR = "spark-sql-kafka-0-10_2.13-{version}.jar"

# Spark's defaults are sized for clusters: 200 shuffle partitions make every micro-batch
# of a small stateful query slow. Event times are UTC throughout.
DEFAULT_CONF = {
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.showConsoleProgress": "false",
}


class SparkSetupError(RuntimeError):
    """The Kafka connector's jars are missing: the message says how to get them."""


def _spark_home() -> Path:
    """Spark's home: ``SPARK_HOME`` (spark-submit's, the image's), else the installed
    PySpark package, which is a Spark distribution."""
    return Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent)


def connector_libs(directory: str | os.PathLike[str] | None = None) -> list[Path]:
    """The jars of Spark's Kafka connector for the installed PySpark: in ``directory``,
    else the one ``TIDELOG_SPARK_LIBS`` names, else the per-version cache; none when
    Spark's own jars hold the connector (the Spark image)."""
    connector = CONNECTOR_JAR.format(version=pyspark.__version__)
    if (_spark_home() / "jars" / connector).is_file():
        return []
    value = directory or os.environ.get(LIBS_ENV_VAR)
    if value:
        libs = Path(value).expanduser()
    else:
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        libs = cache / "tidelog" / f"spark-{pyspark.__version__}" / "libs"
    if not (libs / connector).is_file():
        raise SparkSetupError(
            f"Spark's Kafka connector for PySpark {pyspark.__version__} is not in {libs}; "
            "run `make spark-libs` (needs Java 17 and Maven)"
        )
    return sorted(libs.glob("*.jar"))


def spark_session(
    app_name: str, master: str | None = None, conf: Mapping[str, str] | None = None
) -> SparkSession:
    """A session with the connector on its classpath and :data:`DEFAULT_CONF` under
    ``conf``; ``master`` None leaves it to spark-submit (Kubernetes)."""
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    jars = {"spark.jars": ",".join(map(str, libs))} if (libs := connector_libs()) else {}
    for key, value in {**DEFAULT_CONF, **jars, **(conf or {})}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session
