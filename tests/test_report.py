"""`pipebench report`: figures, the self-contained HTML and its Markdown twin, checked in headless Chromium."""
from __future__ import annotations

import base64
import dataclasses
import html
import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pipebench.report.tables import ENV_COLUMNS
from report_fixtures import (SCALAR, VECTORIZED, configuration, data_files, machine, make_run, passing_configurations,
                             passing_rows, passing_run, rows_of, study_record, trial)

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]
FIGURE_IDS = ["throughput", "format_and_map", "threads", "batch_size", "utilization", "input_bound"]
#: Appended to a copy of the page: records what the browser made of each image, for --dump-dom to show.
PROBE = ('<script>window.addEventListener("load", () => document.body.setAttribute("data-images", JSON.stringify('
         '[...document.images].map(i => { const box = i.getBoundingClientRect(), style = getComputedStyle(i); '
         'return {complete: i.complete, natural_width: i.naturalWidth, natural_height: i.naturalHeight, '
         'width: box.width, height: box.height, visibility: style.visibility, display: style.display}; }))));'
         '</script>')


@pytest.fixture
def report(tmp_path, cli):
    run = passing_run(tmp_path)
    code, out, err = cli("report", run, "--out", tmp_path / "report")
    assert code == 0, err
    return tmp_path / "report"


def test_report_inlines_every_figure_and_writes_a_markdown_twin(report):
    page = (report / "report.html").read_text()
    images = re.findall(r'<img alt="[^"]+" src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == len(FIGURE_IDS)  # no study in this run: no study figure
    assert all(base64.b64decode(data).startswith(b"\x89PNG") for data in images)
    assert "http://" not in page and "https://" not in page  # works offline: nothing to fetch
    markdown = (report / "report.md").read_text()
    for figure_id in FIGURE_IDS:
        assert f"(figures/{figure_id}.png)" in markdown and (report / "figures" / f"{figure_id}.png").exists()
    for text in ("Best configuration", "def input_fn", "Machine facts", "Test CPU", "highly input-bound"):
        assert text in markdown and html.escape(text) in page


def test_report_replaces_its_folder_only_with_force(report, cli):
    """Regression (issue 28): report --out wrote over the files already in the folder (a user's own report.md)."""
    run = report.parent / "run"
    (report / "notes.md").write_text("mine\n")
    before = {p: p.read_bytes() for p in report.rglob("*") if p.is_file()}
    code, _, err = cli("report", run, "--out", report)
    assert (code, err) == (2, f"pipebench: error: {report}: already exists (use --force to replace it)\n")
    assert {p: p.read_bytes() for p in report.rglob("*") if p.is_file()} == before
    code, out, err = cli("report", run, "--out", report, "--force")
    assert code == 0, err
    assert not (report / "notes.md").exists() and (report / "report.md").exists()  # replaced whole, as --force says
    assert [p.name for p in report.parent.iterdir() if p.name.startswith(".")] == []
    code, out, err = cli("report", run)  # the default folder, RUN_DIR/report, is new: no --force needed
    assert code == 0 and out == f"wrote {run / 'report' / 'report.html'} and {run / 'report' / 'report.md'}\n", err


def _markdown(tmp_path, cli, rows) -> str:
    run = make_run(tmp_path / "run", rows, machine())
    code, _, err = cli("report", run, "--out", tmp_path / "out")
    assert code == 0, err
    return (tmp_path / "out" / "report.md").read_text()


def _card(markdown: str) -> str:
    return markdown.split("## Best configuration\n", 1)[1].split("```python", 1)[0]


def test_card_reports_paired_gains_over_the_deck_and_tf_defaults_with_intervals(tmp_path, cli):
    files = data_files(tmp_path / "data")
    configs = passing_configurations(files)
    configs["t-default"] = configs["t-train-tfr"] | {"intra_op_threads": None, "examples_per_sec": 32000}
    card = _card(_markdown(tmp_path, cli, rows_of(configs, files)))
    assert "| examples/sec (95% interval) | 40,000 (" in card and "| repeats | 3 repeats" in card
    deck = next(line for line in card.splitlines() if line.startswith("| the deck's recommended pipeline"))
    assert "(aws-sample, tfrecord, TF default threads) | 32,000 (" in deck and re.search(r"\| 1\.25× \([\d.]+–[\d.]+×\): "
                                                                                        r"faster \| faster \|", deck)
    same = next(line for line in card.splitlines() if line.startswith("| the same pipeline with TF default threads"))
    assert "1.25× (" in same and "faster" in same


def test_the_deck_reference_runs_on_the_best_configurations_own_format(tmp_path, cli):
    """The reference deck ran on libsvm because libsvm was listed first, and the gain printed was mostly the format."""
    files = data_files(tmp_path / "data")
    rows = (configuration("best-svm", "train", "guide", "libsvm", VECTORIZED, 30000, files, intra_op_threads=2)
            + configuration("deck-svm", "train", "aws-sample", "libsvm", VECTORIZED, 25000, files)
            + configuration("deck-tfr", "train", "aws-sample", "tfrecord", VECTORIZED, 5000, files, batch_size=512))
    card = _card(_markdown(tmp_path, cli, rows))
    assert "| pipeline | guide |" in card
    deck = next(line for line in card.splitlines() if line.startswith("| the deck's recommended pipeline"))
    assert "(aws-sample, libsvm, TF default threads) | 25,000 (" in deck and "1.20× (" in deck


def test_a_gain_without_two_shared_rounds_is_not_compared(tmp_path, cli):
    files = data_files(tmp_path / "data")
    rows = (configuration("best", "train", "aws-sample", "tfrecord", VECTORIZED, 40000, files, intra_op_threads=2)
            + [trial("deck-r7", "train", "aws-sample", "tfrecord", VECTORIZED, 20000, files, repeat=7,
                     configuration_id="deck")])
    card = _card(_markdown(tmp_path, cli, rows))
    deck = next(line for line in card.splitlines() if line.startswith("| the deck's recommended pipeline"))
    assert "not compared (fewer than two shared rounds)" in deck and "×" not in deck


def test_the_best_configuration_pools_repeats_never_one_lucky_trial(tmp_path, cli):
    """Found on real data: the card's "Best configuration" was a scalar-decode pipeline from one train trial with CV
    16% ("1.23× the deck's pipeline"). The old card took the fastest single row: the lucky repeat here."""
    files = data_files(tmp_path / "data")
    lucky = [trial(f"lucky-r{r}", "train", "lambdaji-libsvm", "libsvm", SCALAR, rate, files, repeat=r,
                   configuration_id="lucky", rates=[rate * 1.3, rate, rate * 0.7])
             for r, rate in enumerate([34000, 18000, 19000])]
    steady = configuration("steady", "train", "aws-sample", "libsvm", VECTORIZED, 25000, files, intra_op_threads=2)
    markdown = _markdown(tmp_path, cli, lucky + steady)
    assert max(lucky + steady, key=lambda r: r.examples_per_sec_median).trial_id == "lucky-r0"
    card = _card(markdown)
    assert "| pipeline | aws-sample |" in card and "| examples/sec (95% interval) | 25,000 (" in card
    assert "No measurable difference from 1 other configuration(s)" in card and "lambdaji-libsvm" in card
    table = markdown.split("## Best configurations per mode", 1)[1].split("##", 1)[0]
    assert table.count("| train |") == 2, "repeats are one configuration, never separate rows"


def test_busy_configurations_are_marked(tmp_path, cli):
    files = data_files(tmp_path / "data")
    configs = {n: c | {"busy": n.startswith("t-train")} for n, c in passing_configurations(files).items()}
    markdown = _markdown(tmp_path, cli, rows_of(configs, files))
    assert "| busy machine | other processes used the CPU during its windows" in _card(markdown)
    assert "Busy machine: 12 of 21 trials ran while other processes used" in markdown
    assert "measured while other processes used the machine" in markdown  # the verdict lines


def test_figures_give_each_mode_its_own_scale_and_draw_intervals(tmp_path):
    """One axis held 614k input bars beside 25k train bars, so the train bars were unreadable; no intervals."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.container import BarContainer

    from pipebench.report.figures import input_bound, throughput
    from pipebench.results.configurations import configurations

    found = configurations(passing_rows([]))
    figure = plt.figure()
    assert throughput(found, figure)
    axes = {ax.get_title(loc="left"): ax for ax in figure.axes}
    assert set(axes) == {"input mode", "train mode"}
    assert axes["input mode"].get_xlim()[1] > 10 * axes["train mode"].get_xlim()[1]  # each mode on its own scale
    for ax in axes.values():
        (bars,) = [c for c in ax.containers if isinstance(c, BarContainer)]
        assert bars.errorbar is not None and len(bars) == len(ax.get_yticks())
    plt.close(figure)
    figure = plt.figure()
    assert input_bound(found, figure)
    waiting, slowdown = figure.axes
    assert sorted(line.get_xdata()[0] for line in waiting.get_lines() if line.get_linestyle() == ":") == [5.0, 20.0]
    for ax in (waiting, slowdown):
        (bars,) = [c for c in ax.containers if isinstance(c, BarContainer)]
        assert bars.errorbar is not None
    plt.close(figure)


def test_a_figure_with_a_single_point_is_left_out(tmp_path, cli):
    """The quick run drew a 1×1 threads heatmap and a one-point batch curve."""
    files = data_files(tmp_path / "data")
    rows = (configuration("train", "train", "aws-sample", "tfrecord", VECTORIZED, 25000, files)
            + configuration("input", "input", "aws-sample", "tfrecord", VECTORIZED, 600000, files))
    _markdown(tmp_path, cli, rows)
    drawn = sorted(p.stem for p in (tmp_path / "out" / "figures").iterdir())
    assert drawn == ["throughput", "utilization"]  # two configurations, one per mode; nothing else to compare


def test_study_figures_appear_only_when_a_study_exists(tmp_path, cli):
    rows = [dataclasses.replace(r, study="s1", optuna_trial_number=i, rss_peak_bytes=(i + 1) * 2**20)
            for i, r in enumerate(passing_rows([]))]
    run = make_run(tmp_path / "run", rows, machine())
    code, _, err = cli("report", run, "--out", tmp_path / "out")
    assert code == 0, err
    for figure_id in ("study_history", "study_importance", "study_pareto"):
        assert (tmp_path / "out" / "figures" / f"{figure_id}.png").exists(), figure_id


def test_parameter_importance_and_pareto_front():
    import pandas as pd

    from pipebench.report.figures import parameter_importance, pareto_front

    rows = pd.DataFrame({"examples_per_sec_mean": [10.0, 10.0, 30.0, 30.0], "batch_size": [256, 256, 1024, 1024],
                         "intra_op_threads": [1, 2, 1, 2], "inter_op_threads": [None] * 4,
                         "ordering": ["a"] * 4, "format": ["tfrecord"] * 4,
                         **{c: [None] * 4 for c in ENV_COLUMNS}})
    importance = parameter_importance(rows)
    assert importance.to_dict() == {"intra_op_threads": 0.0, "batch_size": 1.0}  # batch explains it all
    points = pd.DataFrame({"rss_peak_bytes": [1, 2, 3, 4], "examples_per_sec_mean": [5.0, 4.0, 9.0, 8.0]})
    assert pareto_front(points)["rss_peak_bytes"].tolist() == [1, 3]


def test_importance_figure_reads_the_importances_the_study_saved(tmp_path):
    from pipebench.report.figures import optuna_importance
    from pipebench.results import load
    from pipebench.results.study import Unavailable, write_study

    assert optuna_importance([study_record(importances={"examples_per_sec": Unavailable("one trial")})])[1].empty
    run = make_run(tmp_path / "run", passing_rows([]), machine())
    write_study(run, study_record("s1", {"examples_per_sec": {"batch_size": 0.7, "intra_op_threads": 0.3}}))
    name, importance = optuna_importance([load(run).study])
    assert name == "s1" and importance.to_dict() == {"intra_op_threads": 0.3, "batch_size": 0.7}


def test_chosen_trials_get_the_utilization_plot(tmp_path, cli):
    run = make_run(tmp_path / "run", passing_rows([]), machine())
    code, _, err = cli("report", run, "--out", tmp_path / "out", "--trial", "t-train-svm-r0", "--trial", "t-input-svm-r1")
    assert code == 0, err
    code, _, err = cli("report", run, "--out", tmp_path / "out", "--trial", "nope")
    assert code == 2 and "no trial nope" in err


def test_report_refuses_mixed_hosts_unless_asked(tmp_path, cli):
    first = make_run(tmp_path / "a", passing_rows([]), machine())
    second = make_run(tmp_path / "b", [dataclasses.replace(r, host_fingerprint="other") for r in passing_rows([])],
                      machine())
    code, _, err = cli("report", first, second, "--out", tmp_path / "out")
    assert code == 1 and "host_fingerprint" in err
    code, _, err = cli("report", first, second, "--out", tmp_path / "out", "--allow-mixed")
    assert code == 0, err


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    reason = "chromium is not installed (scripts/ensure-chromium.sh installs Debian's package)"
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


def test_missing_chromium_fails_under_ci(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match="chromium is not installed"):
        _chromium()


def _browser(chromium: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.slow  # chromium
def test_figures_render_visibly_in_headless_chromium(report, tmp_path):
    from PIL import Image

    chromium = _chromium()
    probe = report / "probe.html"
    probe.write_text((report / "report.html").read_text().replace("</body>", PROBE + "</body>"))
    dom = _browser(chromium, tmp_path / "profile", "--virtual-time-budget=5000", "--dump-dom", probe.as_uri())
    found = re.search(r'data-images="([^"]*)"', dom.stdout)
    assert found, f"no image report in the DOM (chromium said: {dom.stderr[-500:]})"
    images = json.loads(html.unescape(found.group(1)))
    assert len(images) == len(FIGURE_IDS)
    for image in images:
        assert image["complete"] and image["natural_width"] > 100 and image["natural_height"] > 100, image
        assert image["width"] > 100 and image["height"] > 100, image
        assert image["visibility"] == "visible" and image["display"] != "none", image

    ARTIFACTS.mkdir(exist_ok=True)
    screenshot = ARTIFACTS / "report-screenshot.png"
    screenshot.unlink(missing_ok=True)
    shot = _browser(chromium, tmp_path / "profile", f"--screenshot={screenshot}", "--window-size=1280,2400",
                    (report / "report.html").as_uri())
    assert screenshot.exists(), shot.stderr[-500:]
    picture = Image.open(io.BytesIO(screenshot.read_bytes())).convert("RGB")
    colours = picture.getcolors(maxcolors=1 << 20) or []
    assert len(colours) > 50, "the screenshot is (nearly) blank"
    # The figures' coloured bars (not only black text on white) reached the screen.
    coloured = sum(count for count, (r, g, b) in colours if max(r, g, b) - min(r, g, b) > 60)
    assert coloured > 0.01 * picture.width * picture.height


def test_next_steps_name_the_exact_commands_and_the_run_before(tmp_path):
    from pipebench.report.next_steps import next_steps

    first = make_run(tmp_path / "results" / "exp" / "20240101-000000-aaaa", passing_rows([]), machine())
    lines = next_steps(first)
    assert lines[0] == "Next steps:"
    assert [line.split("    #")[0].strip() for line in lines[1:]] == [
        f"pipebench report {first}", f"pipebench checklist {first}",
        f"pipebench pipelines export {first} --out input_fn.py", f"pipebench compare {first} OTHER_RUN_DIR"]
    second = make_run(tmp_path / "results" / "exp" / "20240102-000000-bbbb", passing_rows([]), machine())
    assert next_steps(second)[-1].split("    #")[0].strip() == f"pipebench compare {first} {second}"
    odd = make_run(tmp_path / "a run's folder", passing_rows([]), machine())
    assert f"pipebench report '{tmp_path}/a run'\"'\"'s folder'" in next_steps(odd)[1]  # pastes into a shell


def test_run_ends_by_printing_the_next_steps(tmp_path, fake_trials):
    """The trial loop measures with pipebench.testing.fake_measure (no worker, no TensorFlow); the rest is real."""
    import pipebench.runner as runner
    from pipebench.config import parse_experiment
    from pipebench.report.next_steps import next_steps
    from pipebench.testing import fake_measure

    fake_trials(fake_measure(lambda s: 100.0))
    experiment = parse_experiment({
        "name": "steps", "modes": ["input"], "grid": {"batch_size": [64]}, "pipelines": {"presets": ["lambdaji-libsvm"]},
        "data": {"synth": {"rows": 200, "files": 1}, "formats": ["libsvm"], "holdout_rows": 0,
                 "cache_dir": str(tmp_path / "cache")},
        "measurement": {"repeats": 1}, "results": str(tmp_path / "results")})
    said = []
    outcome = runner.run(experiment, log=said.append)
    assert said[-2].startswith("results: ") and said[-1].splitlines() == next_steps(outcome.run_dir)
