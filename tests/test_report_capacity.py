"""The report's per-stage model section and figures: drawn when a run folder holds capacity.json, absent
otherwise. Hand-made run folders and profiles, no TensorFlow."""
from __future__ import annotations

import dataclasses
import re

import pytest

from capacity_fixtures import profile, write_capacity
from report_fixtures import machine, make_run, passing_configurations, rows_of

import pipebench.results as results
from pipebench.report.projections import model_errors, profiled

STAGES = [("source", 1e-6, True), ("decode", 4e-6, False), ("batch", 0.0, False)]


def _run(tmp_path, name: str, vcpus: int, capacity: bool):
    configs = {n: c | {"run_id": name} for n, c in passing_configurations([]).items()}
    rows = [dataclasses.replace(r, instance_type=name) for r in rows_of(configs, [])]
    run_dir = make_run(tmp_path / name, rows, machine(vcpus=vcpus, physical_cores=vcpus // 2, instance_type=name))
    if capacity:
        write_capacity(run_dir, profile(STAGES, spread=0.05, configuration_id="t-input-tfr"))
    return run_dir


def test_the_report_shows_stage_rates_and_predicted_vs_measured(tmp_path, cli):
    profiled_run, other = _run(tmp_path, "ml.c5.xlarge", 4, True), _run(tmp_path, "ml.c5.2xlarge", 8, False)
    code, _, err = cli("report", profiled_run, other, "--allow-mixed", "--out", tmp_path / "out")
    assert code == 0, err
    markdown = (tmp_path / "out" / "report.md").read_text()
    page = (tmp_path / "out" / "report.html").read_text()
    for figure_id in ("stage_rates", "model_vs_measured"):
        assert f"(figures/{figure_id}.png)" in markdown and (tmp_path / "out" / "figures" / f"{figure_id}.png").exists()
    assert "## Per-stage CPU cost model" in markdown and "<h2>Per-stage CPU cost model</h2>" in page
    assert re.search(r"\| decode \| no \| 4\.00 \([\d.]+–[\d.]+\) \| 250,000 \([\d,]+–[\d,]+\) \|", markdown)
    assert "| source | yes (one core at most) |" in markdown
    assert "| ml.c5.2xlarge | 8 | input | 1,000,000 (" in markdown  # the reader's one core caps it on 8 vCPUs
    assert "| ml.c5.xlarge (profiled here) | 4 | input | 800,000 (" in markdown


def test_a_report_without_capacity_json_has_no_model_section(tmp_path, cli):
    run = _run(tmp_path, "ml.c5.xlarge", 4, False)
    code, _, err = cli("report", run, "--out", tmp_path / "out")
    assert code == 0, err
    drawn = {p.stem for p in (tmp_path / "out" / "figures").iterdir()}
    assert not drawn & {"stage_rates", "model_vs_measured"}
    assert "Per-stage" not in (tmp_path / "out" / "report.md").read_text()


def test_stage_rate_bars_carry_intervals_and_mark_sequential_stages(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.container import BarContainer

    from pipebench.report.figures import model_vs_measured, stage_rates

    runs = [results.load(_run(tmp_path, "ml.c5.xlarge", 4, True))]
    figure = plt.figure()
    assert stage_rates(profiled(runs), figure)
    (ax,) = figure.axes
    (bars,) = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert len(bars) == 2 and bars.errorbar is not None  # the batch stage costs nothing: no rate to draw
    assert [t.get_text() for t in ax.get_yticklabels()] == ["source (sequential: ≤ 1 core)", "decode"]
    assert [b.get_width() for b in bars] == pytest.approx([1e6, 250_000])
    assert "no measurable cost: batch" in ax.get_title(loc="left") and ax.get_xscale() == "log"
    plt.close(figure)
    figure = plt.figure()
    assert model_vs_measured(model_errors(runs), figure)
    plt.close(figure)
    assert not stage_rates([], plt.figure()) and not model_vs_measured([], plt.figure())
    plt.close("all")
