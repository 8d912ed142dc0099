"""Where a pipeline run starts (:func:`plan_start`) and what its commits carry: pure
logic over the group's committed offsets and the checkpoint's query id; and the one line
the pipeline prints when there is no broker to start from."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tidelog.admin.group_offsets import OffsetAndMetadata
from tidelog.admin.groups import TopicPartition
from tidelog.server.process import free_port
from tidelog_spark.offsets import batch_end_offsets, checkpoint_query_id, commit_mark, plan_start

QUERY = "6a1f0c1e-query"
BARS = Path(sys.executable).with_name("tidelog-bars")


def committed(offsets: dict[int, int], metadata: str) -> dict:
    return {
        TopicPartition("ticks", p): OffsetAndMetadata(o, metadata=metadata)
        for p, o in offsets.items()
    }


def test_a_first_run_starts_at_the_earliest_offsets():
    start = plan_start("ticks", [0, 1, 2], {}, None)
    assert (start.resume, start.starting_offsets, start.reset) == (False, "earliest", False)


def test_without_a_checkpoint_a_run_starts_from_the_groups_offsets_and_earliest_elsewhere():
    start = plan_start("ticks", [0, 1, 2], committed({0: 40, 2: 7}, ""), None)
    assert not start.resume and not start.reset
    assert json.loads(start.starting_offsets) == {"ticks": {"0": 40, "1": -2, "2": 7}}


def test_the_jobs_own_commits_mean_its_checkpoint_is_current():
    start = plan_start("ticks", [0, 1], committed({0: 40, 1: 9}, commit_mark(QUERY)), QUERY)
    assert start.resume and not start.reset


def test_a_checkpoint_with_a_group_that_has_no_offsets_resumes():
    assert plan_start("ticks", [0, 1], {}, QUERY).resume


def test_offsets_written_by_someone_else_are_a_reset():
    group = committed({0: 0}, "") | committed({1: 9}, commit_mark(QUERY))
    start = plan_start("ticks", [0, 1], group, QUERY)
    assert not start.resume and start.reset
    assert json.loads(start.starting_offsets) == {"ticks": {"0": 0, "1": 9}}


def test_commits_of_another_query_are_a_reset_too():
    start = plan_start("ticks", [0], committed({0: 5}, commit_mark("another")), QUERY)
    assert start.reset and json.loads(start.starting_offsets) == {"ticks": {"0": 5}}


def test_offsets_of_other_topics_do_not_count():
    other = {TopicPartition("orders", 0): OffsetAndMetadata(3)}
    assert plan_start("ticks", [0], other, QUERY).resume
    assert plan_start("ticks", [0], other, None).starting_offsets == "earliest"


def test_the_end_offsets_of_a_progress_report():
    assert batch_end_offsets('{"ticks":{"0":12,"1":0},"more":{"3":5}}') == {
        ("ticks", 0): 12,
        ("ticks", 1): 0,
        ("more", 3): 5,
    }


def test_the_query_id_of_a_checkpoint(tmp_path):
    assert checkpoint_query_id(tmp_path / "none") is None
    (tmp_path / "metadata").write_text(json.dumps({"id": QUERY}))
    assert checkpoint_query_id(tmp_path) == QUERY


def test_the_pipeline_without_a_broker_says_so_in_one_line(tmp_path):
    done = subprocess.run(
        [BARS, "--bootstrap-server", f"127.0.0.1:{free_port()}", "--state-dir", tmp_path],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("tidelog-bars: no broker answered")
    assert done.stderr.count("\n") == 1, done.stderr
