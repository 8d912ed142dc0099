import pytest

from integration.broker_process import BrokerProcess


@pytest.fixture
def broker(tmp_path, zk_chroot):
    """One running broker with its own ZooKeeper chroot; stopped cleanly after the test
    (a failing stop fails the test)."""
    process = BrokerProcess(tmp_path / "broker", zk_chroot).start()
    yield process
    code = process.stop()
    assert code == 0, f"broker exited with {code}:\n{process.log()[-3000:]}"
