"""DescribeLogDirs over a real LogManager: an offline directory answers
KAFKA_STORAGE_ERROR and the others keep describing their partitions."""

import asyncio
from types import SimpleNamespace

from tidelog.protocol.errors import ErrorCode
from tidelog.server.handlers.log_dirs import handle_describe_log_dirs
from tidelog.storage.config import LogConfig
from tidelog.storage.log_manager import LogManager


def describe(broker, topics=None):
    request = SimpleNamespace(topics=topics)
    return asyncio.run(handle_describe_log_dirs(broker, None, request, None))


def test_an_offline_directory_reports_a_storage_error(tmp_path):
    dirs = [tmp_path / "disk0", tmp_path / "disk1"]
    manager = LogManager(dirs, LogConfig(), broker_id=1)
    manager.startup()
    try:
        manager.get_or_create_log("t", 0, directory=dirs[0])
        manager.get_or_create_log("t", 1, directory=dirs[1])
        broker = SimpleNamespace(
            log_manager=manager, replica_manager=SimpleNamespace(high_watermarks=lambda: {})
        )
        healthy = describe(broker)
        assert [r.error_code for r in healthy.results] == [ErrorCode.NONE, ErrorCode.NONE]
        assert [
            [(t.name, [p.partition_index for p in t.partitions]) for t in r.topics]
            for r in healthy.results
        ] == [[("t", [0])], [("t", [1])]]
        manager.handle_dir_failure(dirs[1], "test: the disk went away")
        response = describe(broker)
        online, offline = response.results
        assert offline.log_dir == str(dirs[1].resolve())
        assert (offline.error_code, offline.topics) == (ErrorCode.KAFKA_STORAGE_ERROR, [])
        assert online.error_code == ErrorCode.NONE and online.total_bytes > 0
        filtered = describe(broker, [SimpleNamespace(topic="t", partitions=[5])])
        assert filtered.results[0].topics == []
    finally:
        manager.shutdown()
