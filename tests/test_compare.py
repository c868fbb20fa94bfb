"""`pipebench compare RUN_A RUN_B`: per configuration both runs measured, each run's own figures on its own
line (never pooled), B / A with an unpaired 95% interval; different data refused, different hosts warned."""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from badinput import Bad, cases
from pipebench.measure.intervals import t_quantile
from pipebench.report.compare import unpaired_ratio
from pipebench.results.configurations import configurations, paired_ratio
from report_fixtures import VECTORIZED, configuration, machine, make_run, trial


def _rows(run_id: str, rate: float, name: str = "c", repeats: int = 3, **kwargs) -> list[dict]:
    return configuration(name, "train", "aws-sample", "tfrecord", VECTORIZED, rate, [], repeats=repeats, run_id=run_id,
                         **kwargs)


def _compare(cli, a: Path, b: Path, *more: str) -> tuple[int, str, str]:
    return cli("compare", a, b, *more)


def test_each_run_keeps_its_own_figures_and_the_ratio_is_unpaired(tmp_path, cli):
    """Rows of two runs must never pool into one configuration, even when both folders have the same run id."""
    a = make_run(tmp_path / "a" / "same-id", _rows("same-id", 20000, waiting=0.30), machine())
    b = make_run(tmp_path / "b" / "same-id", _rows("same-id", 40000, waiting=0.01), machine())
    code, out, err = _compare(cli, a, b, "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["unpaired"] is True and doc["warnings"] == []
    (found,) = doc["configurations"]
    assert found["matched_on"] == "configuration_id" and found["basis"] == "repeat means"
    assert found["a"]["examples_per_sec"]["mean"] == pytest.approx(20000, rel=1e-3)  # A's own, not pooled with B's
    assert found["b"]["examples_per_sec"]["mean"] == pytest.approx(40000, rel=1e-3)
    assert (found["a"]["verdict"], found["b"]["verdict"]) == ("highly input-bound", "not input-bound")
    ratio = found["ratio_b_over_a"]
    assert 1 < ratio["low"] < ratio["mean"] < ratio["high"] and ratio["mean"] == pytest.approx(2.0, rel=1e-3)
    assert found["verdict"] == "faster" and found["a"]["repeats"] == found["b"]["repeats"] == 3
    code, out, _ = _compare(cli, a, b)
    assert code == 0 and out.startswith("# Compare runs (unpaired)") and "**unpaired**" in out
    lines = [line for line in out.splitlines() if line.startswith("| train |")]
    assert len(lines) == 2 and "| A | 20,000 (" in lines[0] and "| B | 40,000 (" in lines[1]
    assert "| 2.00× (" in lines[1] and "faster (over repeat means)" in lines[1]


def test_configurations_of_two_runs_are_never_paired_by_round():
    """Repeat r of two runs ran at different times: a paired ratio between them would pair unrelated rounds."""
    first, second = configurations(_rows("r1", 20000) + _rows("r2", 40000))
    assert first.run_id != second.run_id and first.repeats == second.repeats == 3
    assert paired_ratio(first, second) is None


def test_a_run_against_a_copy_of_itself_is_no_measurable_difference(tmp_path, cli):
    a = make_run(tmp_path / "a", _rows("a", 30000, name="one") + _rows("a", 10000, name="two"), machine())
    b = tmp_path / "b"
    shutil.copytree(a, b)
    code, out, _ = _compare(cli, a, b, "--format", "json")
    doc = json.loads(out)
    assert code == 0 and [c["verdict"] for c in doc["configurations"]] == ["no measurable difference"] * 2
    assert [c["ratio_b_over_a"]["mean"] for c in doc["configurations"]] == [pytest.approx(1.0)] * 2
    assert (doc["only_in_a"], doc["only_in_b"]) == (0, 0)


def test_configurations_whose_ids_differ_match_on_their_labels(tmp_path, cli):
    """A run with other measurement settings gives every configuration another id; its labels still name it."""
    a = make_run(tmp_path / "a", _rows("a", 20000, name="old-id") + _rows("a", 5000, name="only-a", batch_size=256),
                 machine())
    b = make_run(tmp_path / "b", _rows("b", 22000, name="new-id"), machine())
    code, out, _ = _compare(cli, a, b, "--format", "json")
    doc = json.loads(out)
    (found,) = doc["configurations"]
    assert code == 0 and found["matched_on"] == "labels" and (doc["only_in_a"], doc["only_in_b"]) == (1, 0)
    assert found["a"]["configuration_id"] == "old-id" and found["b"]["configuration_id"] == "new-id"


def test_one_repeat_each_compares_over_windows(tmp_path, cli):
    a = make_run(tmp_path / "a", [trial("x", "input", "aws-sample", "tfrecord", VECTORIZED, 0, [], run_id="a",
                                        rates=[100000, 101000, 99000, 100500])], machine())
    b = make_run(tmp_path / "b", [trial("x", "input", "aws-sample", "tfrecord", VECTORIZED, 0, [], run_id="b",
                                        rates=[80000, 81000, 79000, 80500])], machine())
    code, out, _ = _compare(cli, a, b, "--format", "json")
    (found,) = json.loads(out)["configurations"]
    assert code == 0 and found["basis"] == "windows" and found["ratio_b_over_a"]["n"] == 4
    assert found["verdict"] == "slower" and found["a"]["input_wait_pct"] is None


def test_different_hosts_are_warned_about_not_refused(tmp_path, cli):
    a = make_run(tmp_path / "a", _rows("a", 20000), machine())
    other = machine()
    other["host_fingerprint"] = "otherhost"
    b = make_run(tmp_path / "b", _rows("b", 20000), other)
    code, out, _ = _compare(cli, a, b)
    assert code == 0 and "**Warning:** the runs were measured on different hosts (hosttest vs otherhost)" in out


def test_unpaired_ratio_is_welchs_interval_on_log_throughput():
    a, b = [math.exp(v) for v in (0.0, 0.1, 0.2)], [math.exp(v) for v in (0.5, 0.7, 0.9)]
    found = unpaired_ratio(a, b)
    se = math.sqrt(0.01 / 3 + 0.04 / 3)
    df = (0.01 / 3 + 0.04 / 3) ** 2 / ((0.01 / 3) ** 2 / 2 + (0.04 / 3) ** 2 / 2)
    half = t_quantile(0.975, df) * se
    assert df == pytest.approx(2.941, abs=1e-3)
    assert (found.mean, found.low, found.high) == pytest.approx((math.exp(0.6), math.exp(0.6 - half),
                                                                 math.exp(0.6 + half)))
    assert not unpaired_ratio([1.0], [2.0, 3.0]).decided  # one value on a side: no spread to judge by


CASES = [
    Bad("compare-different-data", ("compare", "{tmp}/a", "{tmp}/b"),
        r"^compare: {tmp}/a and {tmp}/b measured different data sets \(datatest vs otherdata\): throughput "
        r"compares only on the same data$",
        make=lambda folder: (make_run(folder / "a", _rows("a", 1000.0), machine()),
                             make_run(folder / "b", _rows("b", 1000.0), machine(), data_fingerprint="otherdata")),
        code=1, process=True),
    Bad("compare-not-a-run-folder", ("compare", "{tmp}", "{tmp}/b"),
        r"^{tmp}: no trials.parquet: not a pipebench run folder",
        make=lambda folder: make_run(folder / "b", _rows("b", 1000.0), machine()), code=2),
    Bad("compare-missing", ("compare", "{tmp}/a", "{tmp}/nope"), r"^{tmp}/nope: no such run folder",
        make=lambda folder: make_run(folder / "a", _rows("a", 1000.0), machine()), code=2),
]


@pytest.mark.parametrize("case", cases(CASES))
def test_refused(case, tmp_path, run_case):
    run_case(case, tmp_path)
