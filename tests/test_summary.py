"""summary.md verdicts: the input fraction against the synthetic ceiling, with a caveat when noisy."""
from __future__ import annotations

from pipebench.report.summary import verdicts


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
