"""Capacity profiles: stage costs from prefix rounds, the interleaved rounds, capacity.json written whole and
merged, and `pipebench capacity` end to end on a real pipeline (the last test runs TensorFlow workers)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipebench.capacity.profile import (PinnedPrefix, RoundValue, _known_text, _one_round, measure_rounds,
                                        prefix_trial, stage_costs, write_profiles)
from pipebench.errors import TrialError
from pipebench.measure.intervals import mean_interval
from pipebench.measure.manager import Limits, Outcome, ProcessFacts
from pipebench.measure.trial import TrialRecord, TrialStatus, Window
from pipebench.pinning import Pinning
from pipebench.pipeline.prefixes import prefixes
from pipebench.pipeline.presets import preset
from pipebench.results.stage_costs import PROFILE_FILE, CapacityProfile, CapacityProfiles
from pipebench.testing import trial_spec
from report_fixtures import configuration, machine, make_run

SPEC = preset("aws-sample", files=("data/part-*.tfrecord",), batch_size=64, epochs=None)
BASE = trial_spec(pipeline=SPEC, configuration_id="cfg")
LIMITS = Limits(120, 4 << 30)


def _values(cpu_us: list[float], rate: float = 1000.0) -> list[RoundValue]:
    """Give rounds of 1000 examples in 1000/rate seconds at these CPU-µs per example."""
    return [RoundValue(1000, 1000 / rate, c * 1e-3) for c in cpu_us]


def test_stage_costs_are_what_each_prefix_adds_and_sum_to_the_whole_pipelines():
    found = prefixes(SPEC)  # source, batch, decode + repeat, prefetch
    costs = stage_costs(list(zip(found, [_values([2.0, 2.2]), _values([1.9, 2.0]), _values([5.0, 5.2]),
                                         _values([5.3, 5.3], rate=2000)])))
    assert [s.stage for s in costs] == ["source", "batch", "decode", "prefetch"]
    assert [s.sequential for s in costs] == [True, True, False, True]
    assert costs[0].prefix_cpu_sec_per_example == mean_interval([2.0e-6, 2.2e-6])
    assert costs[0].cpu_sec_per_example == pytest.approx(2.1e-6)
    assert costs[1].cpu_sec_per_example == 0.0 and costs[1].rate_per_core is None  # cheaper than the source
    assert costs[2].cpu_sec_per_example == pytest.approx(3.0e-6)  # against the source's 2.1, not the batch's 1.95
    assert costs[3].cpu_sec_per_example == pytest.approx(0.2e-6)
    assert sum(s.cpu_sec_per_example for s in costs) == pytest.approx(costs[-1].prefix_cpu_sec_per_example.mean)
    assert costs[3].rate_per_core == pytest.approx(1 / 0.2e-6)
    assert costs[3].prefix_examples_per_sec.mean == pytest.approx(2000.0)
    assert costs[0].why_sequential.startswith("one TFRecord reader")


def _outcome(trial, cpus=(0,), status=TrialStatus.OK, cpu_sec: float | None = 0.001) -> Outcome:
    windows = (Window("input", 0, 1000, 0.5, None, cpu_sec=cpu_sec), Window("input", 1, 1000, 0.5, None, cpu_sec=cpu_sec))
    ok = status is TrialStatus.OK
    record = TrialRecord(status, None if ok else "ValueError: broken", windows_measured=windows if ok else (),
                         cpus_at_start=cpus)
    return Outcome(record, ProcessFacts(1.0, 0, None, None, 0))


def test_rounds_measure_every_prefix_once_each_in_a_seeded_order():
    """The trial loop alone (pipebench.testing's habit): what a worker measures is not faked anywhere else."""
    pinned = [PinnedPrefix(Pinning((0,)), p) for p in prefixes(SPEC)]
    seen: list[tuple[int, int, dict]] = []

    def measure(trial, folder, limits, pinning):
        seen.append((trial.repeat, trial.prefix_stages, pinning))
        return _outcome(trial)

    values = measure_rounds(BASE, pinned, 3, LIMITS, "here", log=lambda text: None, measure=measure)
    assert [len(v) for v in values] == [3] * len(pinned)
    for round_index in range(3):
        assert sorted(s for r, s, _ in seen if r == round_index) == [0, 1, 3, 4]
    orders = [[s for r, s, _ in seen if r == i] for i in range(3)]
    assert len({tuple(o) for o in orders}) > 1  # shuffled per round
    again: list = []
    measure_rounds(BASE, pinned, 3, LIMITS, "here", log=lambda text: None,
                   measure=lambda t, f, limits, pinning: again.append(t.prefix_stages) or _outcome(t))
    assert again == [s for _, s, _ in seen]  # the same seed, the same order


def _busy_outcome(trial, other_pct: float) -> Outcome:
    import dataclasses

    from pipebench.measure.sampler import Usage

    usage = Usage(**{f.name: None for f in dataclasses.fields(Usage)} | {"samples": 3, "other_cpu_pct_median": other_pct})
    return dataclasses.replace(_outcome(trial), usage=usage)


@pytest.mark.parametrize("quiet_by_then", [True, False])
def test_a_prefix_measured_on_a_busy_machine_is_measured_again_once_or_kept_flagged(quiet_by_then):
    """Regression (capacity benchmark of 2026-11-23, beside other agents' tests): three pipelines measured
    slower on 2 cores than on 1 and nothing said the machine was busy. Now a busy worker is measured once
    more when the machine has quietened; a value still busy is flagged and counted in the profile."""
    from pipebench.capacity.profile import profile_of

    pinned = [PinnedPrefix(Pinning((0,)), p) for p in prefixes(SPEC)]
    measured: list[str] = []

    def measure(trial, folder, limits, pinning):
        measured.append(trial.trial_id)
        first_of_prefix_1 = trial.trial_id == "cfg-1c-p1-r0"
        return _busy_outcome(trial, 90.0) if first_of_prefix_1 else _outcome(trial)  # the re-measure is quiet

    values = measure_rounds(BASE, pinned, 2, LIMITS, "here", log=lambda text: None, measure=measure,
                            busy_now=lambda: 5.0 if quiet_by_then else 80.0)
    assert ("cfg-1c-p1-r0-again" in measured) is quiet_by_then
    assert len(measured) == 2 * len(pinned) + quiet_by_then
    assert [v.busy for v in values[1]] == [not quiet_by_then, False]
    profile = profile_of(BASE, Pinning((0,)), list(zip(prefixes(SPEC), values)), "host")
    assert profile.busy_rounds == (0 if quiet_by_then else 1)


def test_a_worker_that_did_not_measure_or_ran_elsewhere_is_one_line_naming_the_prefix():
    item = PinnedPrefix(Pinning((0,)), prefixes(SPEC)[1])
    trial = prefix_trial(BASE, item, 0)
    assert trial.mode == "input" and trial.prefix_stages == 1 and trial.trial_id == "cfg-1c-p1-r0"
    with pytest.raises(TrialError, match=r"^RUN: prefix 'source > batch' on CPU 0: failed: ValueError: broken$"):
        _one_round(_outcome(trial, status=TrialStatus.FAILED), item, "RUN")
    with pytest.raises(TrialError, match=r"started on CPUs \(0, 1\), not the ones asked"):
        _one_round(_outcome(trial, cpus=(0, 1)), item, "RUN")
    with pytest.raises(TrialError, match="recorded no CPU time"):
        _one_round(_outcome(trial, cpu_sec=None), item, "RUN")
    assert _one_round(_outcome(trial), item, "RUN") == RoundValue(2000, 1.0, 0.002)
    long = Outcome(TrialRecord(TrialStatus.FAILED, "DataLossError: " + "corrupted record " * 40),
                   ProcessFacts(1.0, 0, None, None, 0))
    with pytest.raises(TrialError) as raised:
        _one_round(long, item, "/a/long/run/folder/" * 5)
    assert len(str(raised.value)) <= 280 and str(raised.value).endswith("…")


def test_known_configurations_are_cut_to_fit_one_line():
    ids = [f"configuration-{i:03d}" for i in range(50)]
    text = _known_text(ids)
    assert text.startswith("configuration-000, configuration-001") and text.endswith(", … (50 in all)")
    assert len(text) < 200


def _profile(configuration_id: str, cores: int, cpu_us: float) -> CapacityProfile:
    stages = stage_costs([(prefixes(SPEC)[0], _values([cpu_us, cpu_us * 1.1]))])
    return CapacityProfile(configuration_id, "aws-sample / tfrecord, file mode", 64, cores, tuple(range(cores)),
                           "host", stages, None, 0)


def test_capacity_json_keeps_other_profiles_and_replaces_the_same_configuration_and_cores(tmp_path):
    write_profiles(tmp_path, [_profile("a", 1, 2.0), _profile("a", 2, 3.0)])
    write_profiles(tmp_path, [_profile("a", 1, 4.0), _profile("b", 1, 5.0)])
    found = CapacityProfiles.load(tmp_path / PROFILE_FILE)
    assert [(p.configuration_id, p.cores) for p in found.profiles] == [("a", 2), ("a", 1), ("b", 1)]
    assert found.profiles[1] == _profile("a", 1, 4.0)
    assert sorted(os.listdir(tmp_path)) == [PROFILE_FILE]  # written through a temp file, none left


@pytest.mark.tf
def test_pipebench_capacity_profiles_the_fastest_configuration(tmp_path, data, cli):
    """End to end, real workers on real data: every prefix of the fastest configuration at one core."""
    stages = [{"batch": {"batch_size": 64}}, {"decode": {"num_parallel_calls": "AUTOTUNE"}}]
    rows = (configuration("slow", "input", "aws-sample", "tfrecord", stages, 1000, [data["tfrecord"]], repeats=2,
                          batch_size=64)
            + configuration("fast", "input", "aws-sample", "tfrecord", stages, 9000, [data["tfrecord"]], repeats=2,
                            batch_size=64))
    run = make_run(tmp_path / "run", rows, machine())
    code, out, err = cli("capacity", run, "--cores", "1", "--rounds", "2")
    assert code == 0, err
    (profile,) = CapacityProfiles.load(Path(run) / PROFILE_FILE).profiles
    assert (profile.configuration_id, profile.cores, profile.cpus, profile.batch_size) == ("fast", 1, (0,), 64)
    assert [s.stage for s in profile.stages] == ["source", "batch", "decode"]
    for stage in profile.stages:
        assert stage.prefix_examples_per_sec.n == 2 and stage.prefix_examples_per_sec.decided
        assert stage.prefix_cpu_sec_per_example.mean > 0
    assert "wrote" in out and "1 core(s):" in out


def test_rows_of_runs_before_cpu_accounting_still_read_as_configurations():
    """windows_json gained cpu_sec; readers take the keys they know, so older rows read as before (no schema change)."""
    import dataclasses
    import json

    from pipebench.results.configurations import configurations
    from report_fixtures import trial

    new = trial("t", "input", "aws-sample", "tfrecord", [{"batch": 64}, "decode"], 1000.0, ["data/x"])
    assert all("cpu_sec" in w for w in json.loads(new.windows_json))
    old = dataclasses.replace(new, windows_json=json.dumps([{k: v for k, v in w.items()
                                                             if k not in ("cpu_sec", "idle_before_sec")}
                                                            for w in json.loads(new.windows_json)]))
    (from_new,), (from_old,) = configurations([new]), configurations([old])
    assert from_new.throughput == from_old.throughput


def test_parallel_efficiency_is_the_paired_ratio_per_core():
    from pipebench.capacity.profile import parallel_efficiency

    one, two = Pinning((0,)), Pinning((0, 1))
    found = parallel_efficiency((one, _values([1, 1, 1], rate=1000) + _values([1], rate=1200)),
                                (two, _values([1, 1, 1], rate=1500) + _values([1], rate=1800)))
    assert found.mean == pytest.approx(0.75) and found.n == 4  # 1.5x on twice the cores, every round
    assert found.low == pytest.approx(0.75) and found.high == pytest.approx(0.75)
