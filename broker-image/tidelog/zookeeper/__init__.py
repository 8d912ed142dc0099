"""A real Apache ZooKeeper server for tidelog's tests and ``make run``.

* :mod:`.server` - :class:`ZooKeeperServer`: one standalone server process (start, stop,
  restart on the same port and data directory) and the helpers it is built from.
* :mod:`.cli` - ``tidelog-zookeeper``, the same server in the foreground.
"""

from .server import (
    LIBS_ENV_VAR,
    ZooKeeperError,
    ZooKeeperServer,
    ZooKeeperSetupError,
    ZooKeeperStartError,
    find_java,
    four_letter_word,
    zookeeper_libs,
)

__all__ = [
    "LIBS_ENV_VAR",
    "ZooKeeperError",
    "ZooKeeperServer",
    "ZooKeeperSetupError",
    "ZooKeeperStartError",
    "find_java",
    "four_letter_word",
    "zookeeper_libs",
]
