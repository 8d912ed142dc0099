import pytest

from storage.helpers import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
