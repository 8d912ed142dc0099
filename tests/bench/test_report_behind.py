"""The report's "Behind Kafka" list (``bench/report.py``): every figure whose ratio is on
the wrong side of 1.0, and whether the run's own samples tell the two systems apart."""

from __future__ import annotations


def row(metric: str, kafka: list, tidelog: list, ratio: float | None) -> dict:
    return {
        "scenario": "S2",
        "case": "100B lz4",
        "tool": "loadgen",
        "metric": metric,
        "values": {"kafka": kafka, "tidelog": tidelog},
        "spread": {"kafka": kafka, "tidelog": tidelog},  # one figure per session, no repeats
        "ratio": ratio,
    }


def test_samples_are_apart_only_when_their_ranges_do_not_meet(report):
    assert report.separation([1.0, 2.0], [3.0, 4.0]) == "apart"
    assert report.separation([3.0, 4.0], [1.0, 2.0]) == "apart"
    assert report.separation([1.0, 3.0], [2.0, 4.0]) == "overlap"
    assert report.separation([1.0, 2.0], [2.0, 5.0]) == "overlap"


def test_a_single_sample_cannot_tell_the_systems_apart(report):
    assert report.separation([1.0], [3.0]) == "one sample each"
    assert report.separation([1.0, 1.1], [3.0]) == "one sample each"
    # a session that measured nothing (S5 that never shrank) is not a sample
    assert report.separation([1.0, None], [3.0, 4.0]) == "one sample each"


def test_only_figures_on_the_wrong_side_of_one_are_listed(report):
    summary = [
        row("throughput", [38.6, 50.9], [47.4, 41.6], 0.99),  # higher is better: behind
        row("records", [100.0, 110.0], [120.0, 130.0], 1.18),  # ahead
        row("ack p99", [10.0, 12.0], [14.0, 15.0], 1.25),  # lower is better: behind
        row("ack p50", [10.0, 12.0], [6.0, 7.0], 0.55),  # ahead
        row("ack p50", [10.0], [], None),  # tidelog measured nothing: no ratio
        row("achieved rate", [5.0, 5.0], [4.99, 4.99], 0.998),  # 1.00× in the table
        row("time to complete", [17.4], [17.43], 1.002),  # 1.00× too
    ]
    assert report.behind_lines(summary) == [
        "- S2 100B lz4, loadgen, throughput: 0.99×, overlap "
        "(Kafka 38.6–50.9, tidelog 41.6–47.4)",
        "- S2 100B lz4, loadgen, ack p99: 1.25×, apart (Kafka 10.0–12.0, tidelog 14.0–15.0)",
    ]


def test_a_single_sample_row_lists_no_range(report):
    summary = [row("throughput", [45.9], [36.9], 0.80)]
    assert report.behind_lines(summary) == [
        "- S2 100B lz4, loadgen, throughput: 0.80×, one sample each"
    ]


def test_a_session_that_measured_nothing_is_left_out_of_the_ranges(report):
    summary = [row("time to clean", [5.5, 6.5], [7.5, None, 8.0], 1.29)]
    assert report.behind_lines(summary) == [
        "- S2 100B lz4, loadgen, time to clean: 1.29×, apart (Kafka 5.5–6.5, tidelog 7.5–8)"
    ]


def test_a_run_with_nothing_behind_says_so(report):
    summary = [row("throughput", [1.0, 1.1], [2.0, 2.1], 1.9)]
    assert report.behind_lines(summary) == ["None: every ratio is on tidelog's side of 1.0."]


def test_a_figure_that_is_a_median_of_repeats_is_judged_by_its_repeats(report):
    """S11 runs one session per system, each figure the median of the session's
    repeats: the repeats, not the one value per session, tell the systems apart."""
    rows = [
        {"system": system, "session": n, "scenario": "S11", "case": "move", "tool": "loadgen"}
        | {"metric": "ack p99 during", "unit": "ms", "value": value, "repeats": repeats}
        for n, (system, value, repeats) in enumerate(
            [("kafka", 12.0, [10.0, 12.0, 40.0]), ("tidelog", 13.0, [11.0, 13.0, 14.0])]
        )
    ]
    (figure,) = report.summarise(rows)
    assert figure["values"] == {"kafka": [12.0], "tidelog": [13.0]}
    assert report.behind_lines([figure]) == [
        "- S11 move, loadgen, ack p99 during: 1.08×, overlap "
        "(Kafka 10.0–40.0, tidelog 11.0–14.0)"
    ]
