"""``tidelog-server`` that cannot reach ZooKeeper at start-up (a container started before
its ZooKeeper) exits 1 with one line, for a restart policy to try again."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tidelog.server.process import TIDELOG_SERVER, free_port


def test_no_zookeeper_at_start_up_is_one_line_and_status_1(tmp_path: Path) -> None:
    closed = free_port()
    config = tmp_path / "server.properties"
    config.write_text(
        f"zookeeper.connect=127.0.0.1:{closed}\n"
        "zookeeper.connection.timeout.ms=1000\n"
        "listeners=PLAINTEXT://127.0.0.1:0\n"
        f"log.dirs={tmp_path / 'data'}\n"
    )
    result = subprocess.run(
        [str(TIDELOG_SERVER), str(config)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    last = result.stderr.splitlines()[-1]
    assert last == f"tidelog-server: no ZooKeeper answered at 127.0.0.1:{closed} in time"
    assert "Traceback" not in result.stderr
