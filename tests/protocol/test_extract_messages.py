"""``tools/protocol/extract_messages.py``: the committed message definitions are exactly
what the extractor makes of the kafka-clients jar."""

from __future__ import annotations

import filecmp
import importlib.util
import json
from pathlib import Path

from kafka_reference import kafka_libs

REPO_ROOT = Path(__file__).resolve().parents[2]
TOOL = REPO_ROOT / "tools" / "protocol" / "extract_messages.py"
COMMITTED = REPO_ROOT / "broker-image" / "tidelog" / "protocol" / "messages"


def _tool():
    spec = importlib.util.spec_from_file_location("extract_messages", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _clients_jar() -> tuple[Path, str]:
    (jar,) = kafka_libs().glob("kafka-clients-*.jar")
    return jar, jar.stem.removeprefix("kafka-clients-")


def test_strip_comments_keeps_strings():
    tool = _tool()
    text = '{\n  // a comment\n  "a": "http://x // y", // trailing\n  "b": "q\\"//"\n}'
    assert json.loads(tool.strip_comments(text)) == {"a": "http://x // y", "b": 'q"//'}


def test_committed_messages_are_up_to_date(tmp_path):
    jar, version = _clients_jar()
    (tmp_path / "Stale.json").write_text("{}")
    stems = _tool().extract(jar, tmp_path, version)
    assert not (tmp_path / "Stale.json").exists()
    assert len(stems) == 178  # 88 requests, 88 responses, 2 headers
    committed = sorted(p.name for p in COMMITTED.iterdir())
    assert sorted(p.name for p in tmp_path.iterdir()) == committed
    assert {"LICENSE", "NOTICE"} <= set(committed)
    _, mismatch, errors = filecmp.cmpfiles(tmp_path, COMMITTED, committed, shallow=False)
    assert (mismatch, errors) == ([], [])


def test_files_carry_their_source_and_license():
    data = json.loads((COMMITTED / "FetchRequest.json").read_text())
    assert data["license"] == "Apache License 2.0"
    assert data["source"].startswith("Apache Kafka 3.9.1, kafka-clients-3.9.1.jar")
    assert data["definition"]["apiKey"] == 1
