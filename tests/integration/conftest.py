import pytest

from integration.broker_process import BrokerProcess
from integration.cluster import Cluster


@pytest.fixture
def broker(tmp_path, zk_chroot):
    """One running broker with its own ZooKeeper chroot; stopped cleanly after the test
    (a failing stop fails the test)."""
    process = BrokerProcess(tmp_path / "broker", zk_chroot).start()
    yield process
    code = process.stop()
    assert code == 0, f"broker exited with {code}:\n{process.log()[-3000:]}"


@pytest.fixture
def cluster(tmp_path, zk_chroot):
    """Three running brokers (ids 1, 2, 3) on one ZooKeeper chroot, with a short
    ZooKeeper session so that a killed broker is noticed within seconds; those still
    running after the test must stop cleanly."""
    with Cluster(tmp_path, zk_chroot, size=3) as running:
        yield running
