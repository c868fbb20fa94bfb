"""summary.md verdicts: the input fraction against the synthetic ceiling, with a caveat when noisy."""
from __future__ import annotations

from pipebench.report.summary import best_table, verdicts


def _row(mode: str, rate: float, fraction=None, bound=None) -> dict:
    return {"run_id": "r", "mode": mode, "status": "ok", "examples_per_sec_median": rate, "config_key": "k", "pipeline": "p",
            "format": "tfrecord", "ordering": "batch > decode", "batch_size": 1024, "intra_op_threads": None,
            "inter_op_threads": None, "input_fraction": fraction, "input_bound": bound}


def test_verdict_names_both_rates_and_the_label():
    (line,) = verdicts([_row("synthetic", 40_000), _row("train", 20_000, 0.5, "highly input-bound")])
    assert "train 20,000 ex/s vs synthetic 40,000 ex/s → 50% of step time" in line
    assert line.endswith("**highly input-bound**")


def test_train_beating_the_ceiling_is_flagged_not_hidden():
    (line,) = verdicts([_row("synthetic", 28_000), _row("train", 40_000, 0.0, "not input-bound")])
    assert "train beat the synthetic ceiling by 43%" in line and "rerun" in line


def test_a_verdict_never_borrows_another_runs_ceiling():
    """`pipebench report R1 R2` printed R2's train rate against R1's ceiling when they shared a config key."""
    rows = [_row("synthetic", 27_000) | {"run_id": "r1"}, _row("train", 14_500, 0.46, "highly input-bound") | {"run_id": "r1"},
            _row("synthetic", 17_000) | {"run_id": "r2"}, _row("train", 14_518, 0.15, "moderately input-bound") | {"run_id": "r2"}]
    first, second = verdicts(rows)
    assert first.startswith("- run r1: ") and "vs synthetic 27,000 ex/s" in first
    assert second.startswith("- run r2: ") and "vs synthetic 17,000 ex/s" in second


def test_the_best_table_names_the_run_of_each_row_when_runs_are_pooled():
    rows = [_row("train", 10.0) | {"run_id": "r1", "examples_per_sec_cv_pct": 1.0},
            _row("train", 20.0) | {"run_id": "r2", "examples_per_sec_cv_pct": 1.0}]
    header, _, *lines = best_table(rows).splitlines()
    assert header.startswith("| run | mode |") and lines[0].startswith("| r2 | train |")
    assert not best_table(rows[:1]).startswith("| run")
