"""The pruner: only a trial clearly below the others at a window is stopped, and only when throughput is
the study's objective (no TensorFlow: a real in-memory Optuna study with reported windows)."""
from __future__ import annotations

import pytest

from pipebench.config import parse_experiment
from pipebench.errors import ConfigError

optuna = pytest.importorskip("optuna")

from pipebench.search.pruning import MarginPruner, make_pruner  # noqa: E402


def _search(**search) -> dict:
    return parse_experiment({"name": "prune", "search": {"driver": "optuna", **search}})["search"]


def _study_with(pruner, complete: list[float]) -> optuna.Study:
    """Give a maximising study whose complete trials reported `complete` at window 1."""
    study = optuna.create_study(direction="maximize", pruner=pruner)
    for value in complete:
        trial = study.ask()
        trial.report(value, 1)
        study.tell(trial, value)
    return study


def _pruned_at(study: optuna.Study, value: float) -> bool:
    trial = study.ask()
    trial.report(value, 1)
    return trial.should_prune()


def test_the_default_pruner_stops_a_hopeless_trial_but_not_one_within_noise_of_the_median():
    """Regression (live check of 2026-11-23): the default was Optuna's MedianPruner, which stopped batch-2048
    trials at 0.9 of the median after one window; a pruned trial never enters the confirmation race."""
    pruner = make_pruner(_search(), windows=3, log=print)
    assert isinstance(pruner, MarginPruner) and pruner.margin == 0.5
    study = _study_with(pruner, [400_000.0, 500_000.0])  # median 450k: the margin is 225k
    assert not _pruned_at(study, 405_000.0)  # 0.9 of the median: within noise, measured to the end
    assert not _pruned_at(study, 230_000.0)
    assert _pruned_at(study, 9_000.0)  # libsvm beside TFRecord: hopeless


def test_the_margin_pruner_waits_for_two_complete_trials_at_that_window():
    study = _study_with(MarginPruner(0.5), [500_000.0])
    assert not _pruned_at(study, 1.0)


def test_the_median_pruner_stays_available_by_name():
    assert isinstance(make_pruner(_search(pruner="median"), windows=3, log=print), optuna.pruners.MedianPruner)
    assert isinstance(make_pruner(_search(pruner="none"), windows=3, log=print), optuna.pruners.NopPruner)


def test_no_pruning_when_throughput_is_not_the_objective():
    """Regression: a study minimising memory got a pruner reading examples/s, which stops the fastest trials."""
    said = []
    pruner = make_pruner(_search(objectives=["rss_peak_bytes"], confirm_top=0), windows=3, log=said.append)
    assert isinstance(pruner, optuna.pruners.NopPruner)
    assert said == ["search.pruner margin ignored: trials report examples/s at each window, and the study's "
                    "objectives are rss_peak_bytes"]


@pytest.mark.parametrize("margin", [0, 1, 1.5, -0.1])
def test_a_margin_outside_0_to_1_is_refused(margin):
    with pytest.raises(ConfigError, match="search.prune_margin"):
        _search(prune_margin=margin)
