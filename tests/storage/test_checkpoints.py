import pytest

from tidelog.storage.checkpoints import (
    CheckpointError,
    read_offset_checkpoint,
    read_properties,
    write_offset_checkpoint,
    write_properties,
)


def test_offset_checkpoint_is_kafka_text_format(tmp_path):
    path = tmp_path / "recovery-point-offset-checkpoint"
    write_offset_checkpoint(path, {("orders", 1): 99, ("orders", 0): 1234, ("a-b", 7): 0})
    assert path.read_text() == "0\n3\na-b 7 0\norders 0 1234\norders 1 99\n"
    assert read_offset_checkpoint(path) == {("orders", 1): 99, ("orders", 0): 1234, ("a-b", 7): 0}
    assert not (tmp_path / "recovery-point-offset-checkpoint.tmp").exists()


def test_missing_checkpoint_is_empty_and_malformed_one_fails(tmp_path):
    path = tmp_path / "cp"
    assert read_offset_checkpoint(path) == {}
    for text, message in [
        ("1\n0\n", "version"),
        ("0\n2\nt 0 1\n", "expected 2"),
        ("0\n1\nt x 1\n", "line 3"),
        ("0\n1\nt 0 y\n", "bad offset"),
    ]:
        path.write_text(text)
        with pytest.raises(CheckpointError, match=message):
            read_offset_checkpoint(path)


def test_properties_round_trip(tmp_path):
    path = tmp_path / "meta.properties"
    write_properties(path, {"version": "0", "broker.id": "3"})
    assert path.read_text().startswith("#\n#")
    assert read_properties(path) == {"version": "0", "broker.id": "3"}
