"""Service sizing: FastFlow's worker count from measured local, one-worker and ceiling throughputs, with the
corners of their intervals, and the client-side MB/s ceiling (rows made to order; no TensorFlow)."""
from __future__ import annotations

import json

import pytest

from report_fixtures import row_of

from pipebench.report.service_sizing import client_ceiling, fastflow_workers, sizing_lines, sizings
from pipebench.results.trial_row import TrialRow
from pipebench.testing import windows_at
from pipebench.typed import to_json


def _row(configuration: str, mode: str, source_mode: str, rates: list[float], synthetic: list[float] | None = None,
         service: dict | None = None, bytes_per_example: float | None = None) -> TrialRow:
    windows = windows_at(mode, rates, synthetic)
    return row_of({"run_id": "r", "configuration_id": configuration, "trial_id": configuration, "repeat": 0,
            "status": "ok", "mode": mode, "source_mode": source_mode, "pipeline": "aws-sample", "format": "tfrecord",
            "ordering": "batch > decode > repeat > prefetch", "batch_size": 256, "intra_op_threads": None,
            "inter_op_threads": None, "windows_json": json.dumps(to_json(windows)),
            "examples_per_sec_mean": sum(rates) / len(rates), "busy_machine": False,
            "service_json": json.dumps(service) if service else None, "service_bytes_per_example": bytes_per_example})


ROWS = [
    _row("local", "input", "file", [1000, 1100, 1050]),
    _row("one", "input", "service", [300, 320, 310], service={"workers": 1, "sharding_policy": "DYNAMIC",
                                                              "split_before": "prefetch"}, bytes_per_example=472),
    _row("two", "input", "service", [500, 520, 510], service={"workers": 2, "sharding_policy": "DYNAMIC",
                                                              "split_before": "prefetch"}, bytes_per_example=472),
    _row("train", "train", "file", [900, 950, 925], synthetic=[2000, 2100, 2050]),
]


@pytest.mark.parametrize("ceiling,local,one,workers", [
    (2050, 1050, 310, 4),  # (1000 / 310) − 0.1 = 3.13 → 4
    (1000, 1050, 310, 0),  # the local pipeline already reaches the ceiling
    (1000, 0, 250, 4),  # 4.0 − 0.1 rounds up to exactly 4, not 5
])
def test_fastflow_count(ceiling, local, one, workers):
    assert fastflow_workers(ceiling, local, one) == workers


def test_sizing_reads_the_three_throughputs_with_their_intervals():
    (found,) = sizings(ROWS)
    assert (found.ceiling.mean, found.local.mean, found.one_worker.mean) == pytest.approx((2050, 1050, 310), rel=1e-2)  # geometric means
    assert found.beside_local.mean == 4 and found.all_remote.mean == 7  # 2050 / 310 − 0.1 = 6.5 → 7
    assert found.beside_local.best <= 4 <= found.beside_local.worst
    assert found.beside_local.best < found.beside_local.worst, "three rounds: the corners differ"


def test_client_ceiling_is_the_fastest_service_configuration_in_mb_per_sec():
    rate, where = client_ceiling(ROWS)
    assert rate.mean == pytest.approx(510 * 472 / 1e6, rel=1e-2) and rate.decided and "2 worker(s)" in where


def test_everything_through_the_service_needs_at_least_one_worker():
    from pipebench.measure.intervals import Interval
    from pipebench.report.service_sizing import worker_count

    fast = Interval(360_000, 300_000, 420_000, 3)  # one worker far faster than the model takes examples
    ceiling = Interval(20_000, 10_000, 40_000, 3)
    assert worker_count(ceiling, None, fast).text() == "1 (1–1)"
    assert worker_count(ceiling, Interval(470_000, 250_000, 860_000, 3), fast).text() == "0 (0–0)"


def test_summary_lines_say_unavailable_without_a_ceiling_or_a_one_worker_trial():
    without_train = [r for r in ROWS if r.mode != "train"]
    assert "unavailable: no train trial at this batch size and threads measured the compute ceiling" in \
        "\n".join(sizing_lines(without_train))
    without_one = [r for r in ROWS if r.configuration_id != "one"]
    assert "unavailable: no input trial through the service with `sources.service.workers: 1`" in \
        "\n".join(sizing_lines(without_one))
    assert sizing_lines([r for r in ROWS if r.source_mode == "file"]) == []
    text = "\n".join(sizing_lines(ROWS))
    assert "FastFlow" in text and "→ 4 (" in text and "MB/s" in text


def test_the_best_table_tells_service_rows_from_file_rows():
    from pipebench.report.summary import best_table

    lines = best_table(ROWS).splitlines()
    assert sum("| aws-sample @service |" in line for line in lines) == 2
    assert sum("| aws-sample |" in line for line in lines) == 2  # file mode: input and train


@pytest.mark.parametrize("rows,status,says", [
    # no file-mode input trial: L unknown, so nothing can be said beside the local pipeline (was a PASS)
    ([r for r in ROWS if r.configuration_id != "local"], "N/A", "unavailable: no file-mode trial measured"),
    # L ≈ C at the means, but the worst corner of the intervals needs workers: inconclusive (was a PASS)
    ([_row("local", "input", "file", [1500, 2600, 2000]), *ROWS[1:3],
      _row("train", "train", "file", [900, 950, 925], synthetic=[1500, 2600, 2000])], "WARN", "Inconclusive"),
    ([_row("local", "input", "file", [9000, 9100, 9050]), *ROWS[1:]], "PASS", "even at the worst corner"),
])
def test_the_checklist_item_passes_only_when_the_worst_corner_needs_no_worker(rows, status, says):
    """Regression (review of the service merge): the item said PASS "the local pipeline reaches the compute
    ceiling" when no trial measured the local pipeline, and on the mean count alone."""
    from types import SimpleNamespace

    from pipebench.report.service_sizing import service_workers
    from pipebench.typed import to_json

    item = to_json(service_workers([SimpleNamespace(rows=rows)]))
    assert item["status"] == status and says in item["advice"], item["advice"]
