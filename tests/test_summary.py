"""summary.md from recorded windows (no TensorFlow, no timing): verdicts with intervals, inconclusive when the
interval straddles a threshold, configurations ranked by paired ratio, repeats pooled, busy trials said."""
from __future__ import annotations

import dataclasses

from report_fixtures import machine

from pipebench.measure.facts import MachineFacts
from pipebench.measure.manager import Outcome, ProcessFacts
from pipebench.measure.sampler import Usage
from pipebench.measure.trial import TrialRecord, TrialStatus
from pipebench.report.summary import best_table, busy_lines, verdicts
from pipebench.results.rows import RowContext, trial_row
from pipebench.results.trial_row import TrialRow
from pipebench.testing import trial_spec, windows_at

FACTS = MachineFacts.from_json(machine(), "machine.json")


def _row(mode: str, rates: list[float], synthetic: list[float] | None = None, waited: list[float] | None = None,
         run_id: str = "r", repeat: int = 0, configuration: str = "c", other_cpu: float = 0.0,
         train_device: str | None = None, **spec) -> TrialRow:
    record = TrialRecord(TrialStatus.OK, windows_measured=windows_at(mode, rates, synthetic, waited),
                         rounds=len(rates), rounds_cap_hit=False, train_device=train_device)
    usage = Usage(**{f.name: None for f in dataclasses.fields(Usage)} | {"samples": 1, "other_cpu_pct_median": other_cpu})
    trial = trial_spec(mode=mode, repeat=repeat, configuration_id=configuration,
                       trial_id=f"{run_id}-{configuration}-{repeat}", **spec)
    return trial_row(RowContext(trial, Outcome(record, ProcessFacts(1.0, 0, None, None, 1), usage=usage), run_id,
                                "host", FACTS, 0.0, 1.0))


def test_a_verdict_says_what_input_costs_this_trainer_with_both_measures_and_their_intervals():
    """The quick run's lambdaji-libsvm case: the step barely waits, yet input costs 46% of training speed. On the
    CPUs the model trains on, the verdict reads the slowdown, and the sentence says why the two differ."""
    rates, synthetic = [14_000, 14_200, 13_900, 14_100], [26_000, 26_300, 25_900, 26_100]
    (line,) = verdicts([_row("train", rates, synthetic, [0.010, 0.012, 0.011, 0.013])])
    assert ("**highly input-bound** for a CPU trainer (its train step ran on the CPUs): input costs 46.1% "
            "(45.9–46.4%) of training speed here: the pipeline competes with the model for the CPUs; the step itself "
            "barely waits (1.1% (0.9–1.4%))") in line
    assert "Train 14,050 (" in line and "synthetic ceiling 26,075 (" in line and "4 rounds in 1 process" in line
    (line,) = verdicts([_row("train", rates, synthetic, [0.010, 0.012, 0.011, 0.013], train_device="GPU")])
    assert ("**not input-bound** for an accelerator trainer (its train step ran on a GPU): the step waits for input "
            "1.1% (0.9–1.4%) of its time; beside the same step on batches from memory it trains 46.1% (45.9–46.4%) "
            "slower here") in line


def test_an_interval_across_a_threshold_is_inconclusive_never_a_confident_label():
    (line,) = verdicts([_row("train", [15_000] * 3, [15_300, 16_500, 15_600], [0.01] * 3)])
    assert "**inconclusive (slowdown 5.0% (-4.7 to 13.8%))**" in line
    assert "not input-bound" not in line and "moderately" not in line


def test_repeats_are_one_configuration_and_runs_never_share_one():
    """A verdict borrowed another run's synthetic ceiling when rows of two runs shared a config key."""
    rows = [_row("train", [14_500] * 3, [27_000] * 3, [0.30] * 3, run_id="r1", repeat=0),
            _row("train", [14_500] * 3, [27_000] * 3, [0.32] * 3, run_id="r1", repeat=1),
            _row("train", [14_518] * 3, [17_000] * 3, [0.01] * 3, run_id="r2")]
    first, second = verdicts(rows)
    assert first.startswith("- run r1: ") and "synthetic ceiling 27,000" in first and "6 rounds in 2 processes" in first
    assert second.startswith("- run r2: ") and "synthetic ceiling 17,000" in second


def test_the_best_table_ranks_by_paired_ratio_and_names_ties():
    fast = [_row("input", [1_000_000 + d] * 2, repeat=r, configuration="fast", batch_size=1024)
            for r, d in enumerate((0, 30_000, -20_000))]
    tie = [_row("input", [990_000 + d] * 2, repeat=r, configuration="tie", batch_size=512)
           for r, d in enumerate((10_000, 20_000, 0))]
    slow = [_row("input", [500_000 + d] * 2, repeat=r, configuration="slow", batch_size=128)
            for r, d in enumerate((0, 10_000, -5_000))]
    lines = best_table(fast + tie + slow).splitlines()[2:]
    assert "fastest" in lines[0] and "| 3 |" in lines[0]
    assert "no measurable difference" in lines[1] and lines[1].count("|") == lines[0].count("|")
    assert ": slower" in lines[2] and "0.50×" in lines[2]
    assert len(lines) == 3, "repeats are one configuration, never separate rows"
    single = best_table([_row("input", [10.0, 11.0], configuration="a"), _row("input", [9.0, 9.5], configuration="b")])
    assert "not compared (fewer than two shared rounds)" in single


def test_the_action_names_what_is_as_fast_as_the_fastest():
    """Which of two configurations the paired ratio cannot tell apart ranks first moves from run to run: the
    action sentence names the other beside its choice, with their ratio."""
    from pipebench.report.action import Baseline, action

    def rows(configuration: str, rate: float, batch_size: int, spread=(0, 30_000, -20_000)) -> list[TrialRow]:
        return [_row("input", [rate + d] * 2, repeat=r, configuration=configuration, batch_size=batch_size)
                for r, d in enumerate(spread)]
    fast, tie = rows("fast", 1_000_000, 1024), rows("tie", 990_000, 512, (10_000, 20_000, 0))
    slow = rows("slow", 500_000, 128, (0, 10_000, -5_000))
    said = action(fast + tie + slow, Baseline("slow"))
    assert said.startswith("Use aws-sample on TFRecord: it reads 2.0")
    clause = said.split("; as fast within the noise: ")[1]
    assert clause.startswith("aws-sample on TFRecord with batch ") and clause.split(";")[0].endswith("×) of it")
    assert "as fast within the noise" not in action(fast + slow, Baseline("slow"))


def test_the_best_table_names_the_run_of_each_row_when_runs_are_pooled():
    rows = [_row("input", [10.0, 10.0], run_id="r1"), _row("input", [20.0, 20.0], run_id="r2")]
    header, _, *lines = best_table(rows).splitlines()
    assert header.startswith("| run | mode |") and lines[0].startswith("| r2 | input |")
    assert not best_table(rows[:1]).startswith("| run")


def test_busy_trials_are_said_with_what_was_done_about_them():
    busy = _row("input", [5.0, 5.0], other_cpu=97.0, configuration="a")
    again = dataclasses.replace(_row("input", [9.0, 9.0], configuration="a"), trial_id=busy.trial_id + "-again",
                                remeasure_of=busy.trial_id)
    left = _row("input", [5.0, 5.0], other_cpu=80.0, configuration="b")
    (line, _) = busy_lines([busy, again, left], 25.0)
    assert line.startswith("**Busy machine:** 2 of 3 trials") and "1 quiet the second time" in line
    assert "not measured again: 1 (left flagged)" in line
    assert busy_lines([again], 25.0) == []


def test_a_busy_machine_gives_no_confident_label_and_says_what_its_rounds_read():
    """On a busy machine lambdaji-libsvm's waiting share fell from ~9% (moderately, idle) to 2.9% (0.8–5.0%):
    other processes slow the step and the pipeline unevenly, so the share itself moves."""
    rates, synthetic, waited = [14_000, 14_200, 13_900, 14_100], [26_000, 26_300, 25_900, 26_100], [0.01] * 4
    busy = _row("train", rates, synthetic, [0.010, 0.012, 0.011, 0.013], other_cpu=97.0)
    (line,) = verdicts([busy])
    assert "**inconclusive (slowdown 46.1% (45.9–46.4%); highly input-bound on a busy machine)**" in line
    assert busy.input_bound == "inconclusive" and busy.busy_machine is True
    quiet = _row("train", rates, synthetic, waited)
    assert quiet.input_bound == "highly input-bound" and "**highly input-bound** for" in verdicts([quiet])[0]


def test_a_run_of_schema_v6_reads_with_its_verdicts_on_the_waiting_share_and_says_so(tmp_path):
    """Rows written before the basis existed have no input_bound_basis: their verdicts read the waiting share, as
    when they were written, and the sentence says what was assumed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipebench.results.schema import TRIAL_SCHEMA, VERSION_KEY
    from pipebench.results.store import read_table
    from pipebench.results.trial_row import rows_of

    row = _row("train", [14_000, 14_200, 13_900, 14_100], [26_000, 26_300, 25_900, 26_100], [0.010, 0.012, 0.011, 0.013])
    assert row.input_bound == "highly input-bound"  # on the slowdown, as written today
    v6 = pa.schema([f for f in TRIAL_SCHEMA if f.name not in ("input_bound_basis", "train_device")])
    table = pa.Table.from_pylist([{name: row.to_dict()[name] for name in v6.names}], schema=v6)
    pq.write_table(table.replace_schema_metadata({VERSION_KEY: b"6"}), tmp_path / "trials.parquet")
    (old,) = rows_of(read_table(tmp_path / "trials.parquet", TRIAL_SCHEMA), "trials.parquet")
    assert old.input_bound_basis is None and old.train_device is None
    (line,) = verdicts([old])
    assert "**not input-bound** for an accelerator trainer (assumed: runs made before the verdict followed the " \
           "trainer read the waiting share for every trainer): the step waits for input 1.1% (0.9–1.4%)" in line


def test_a_re_measured_busy_trial_pairs_with_no_round_it_did_not_run_in():
    """A busy trial measured again at the end of the run keeps its repeat index, but ran in no round with the
    others: pairing it with their repeat would call a ratio of two moments paired."""
    from pipebench.results.configurations import configurations, paired_ratio

    rows = [_row("input", [10.0, 10.0], repeat=r, configuration="a") for r in range(3)]
    rows += [_row("input", [20.0, 20.0], repeat=r, configuration="b") for r in range(3)]
    again = dataclasses.replace(_row("input", [20.0, 20.0], repeat=2, configuration="a"), trial_id="r-a-2-again",
                                remeasure_of="r-a-2")
    found = {c.configuration_id: c for c in configurations(rows + [again])}
    assert sorted(found["a"].by_round()) == [0, 1], "the re-measure replaces repeat 2 but pairs with nothing"
    assert paired_ratio(found["a"], found["b"]).n == 2
