"""One producer per concept (docs/development/architecture.md, "One concept, one producer"): what would fail if a
second producer came back. The round order has its own file (test_round_order.py)."""
from __future__ import annotations

import pytest

from pipebench.measure import machine


def test_pipebench_env_is_the_one_command_printing_machine_facts():
    """`python -m pipebench.measure.machine` is only the TensorFlow-facts child now; it prints no machine facts."""
    with pytest.raises(SystemExit) as refused:
        machine.main(["--json"])
    assert refused.value.code == 2


def test_machine_facts_and_the_entry_point_read_the_same_sagemaker_host_facts(tmp_path):
    """Regression (design review 2026-11-26): without the toolkit's SM_* variables machine facts said no instance
    type while the entry point read it from resourceconfig.json; one reader now gives both."""
    import json

    from pipebench.sagemaker.environment import read_environment

    config = tmp_path / "input" / "config"
    config.mkdir(parents=True)
    (config / "resourceconfig.json").write_text(json.dumps({"current_host": "algo-2", "hosts": ["algo-1", "algo-2"],
                                                            "current_instance_type": "ml.c5.xlarge"}))
    (config / "inputdataconfig.json").write_text(json.dumps({"train": {"TrainingInputMode": "File"}}))
    for env in ({"SAGEMAKER_BASE_DIR": str(tmp_path)},
                {"SAGEMAKER_BASE_DIR": str(tmp_path), "SM_CURRENT_INSTANCE_TYPE": "ml.m5.large", "SM_NUM_CPUS": "2"}):
        facts, job = machine.sagemaker_facts(None, env), read_environment(env)
        assert (facts["instance_type"], facts["current_host"], facts["host_count"], facts["in_training_job"]) == (
            job.instance_type, job.current_host, len(job.hosts), True)
        assert facts["instance_type_source"] == machine.INSTANCE_TYPE_FROM_SAGEMAKER
    assert facts["num_cpus"] == job.num_cpus == 2
    assert machine.sagemaker_facts("ml.c5.9xlarge", {"SAGEMAKER_BASE_DIR": str(tmp_path / "none")})[
        "instance_type_source"] == machine.INSTANCE_TYPE_ASSERTED


@pytest.mark.parametrize("measured_in", ["machine", "rows"])
def test_collect_keeps_the_row_builders_columns_and_refuses_a_run_of_another_instance_type_or_mode(
        tmp_path, aws, measured_in):
    """collect once rewrote instance_type and source_mode after the row builder (a service trial became `file`);
    it now keeps every column as the host's row builder filled it, scopes only the trial ids, and refuses a run
    folder that does not go with its job instead of relabelling it."""
    import re
    import shutil

    from collect_fixtures import LAUNCH_URI, RUN_DIR, archive, host, launch_jobs, run_folder, upload_archive

    from pipebench.errors import DataError
    from pipebench.results.rows import member_row
    from pipebench.sagemaker.collect import collect

    (job,) = launch_jobs(("FastFile",))
    root = tmp_path / "archive"
    host("algo-1")(root, tmp_path, job)
    upload_archive(job, archive(root))
    merged = collect(LAUNCH_URI, tmp_path / "merged", log=lambda text: None)
    written = _rows(root / "algo-1" / RUN_DIR)
    label = f"{job['instance_type']}/FastFile/algo-1"
    assert _rows(merged) == [member_row(r, label) for r in written]

    other = {**job, "instance_type": "ml.m5.large"} if measured_in == "machine" else {**job, "input_mode": "Pipe"}
    shutil.rmtree(root / "algo-1" / RUN_DIR)
    run_folder(root / "algo-1" / RUN_DIR, other)
    upload_archive(job, archive(root))
    expected = ("machine.json: instance_type 'ml.m5.large' is not the job's" if measured_in == "machine"
                else "trials.parquet: source_mode 'pipe' is not the job's (fastfile or service)")
    with pytest.raises(DataError, match=re.escape(f"algo-1/{RUN_DIR}/{expected}")):
        collect(LAUNCH_URI, tmp_path / "again", log=lambda text: None)


def _rows(folder):
    from pipebench.results.schema import TRIAL_SCHEMA
    from pipebench.results.store import read_table

    return read_table(folder / "trials.parquet", TRIAL_SCHEMA).to_pylist()


@pytest.mark.parametrize("quiet_by_then", [True, False])
def test_capacity_and_the_trial_loop_measure_busy_ones_again_by_one_rule(quiet_by_then):
    """Capacity measured a busy prefix again at once, the loop at the end of the run; both now take
    pipebench.measure.busy.BusyRule: after the last round, while the machine is quiet, else the reason."""
    from test_capacity_profile import BASE, LIMITS, SPEC, _busy_outcome, _outcome

    from pipebench.pipeline.prefixes import prefixes
    from pipebench.capacity.profile import PinnedPrefix, measure_rounds
    from pipebench.measure.busy import BusyRule
    from pipebench.pinning import Pinning

    pinned = [PinnedPrefix(Pinning((0,)), p) for p in prefixes(SPEC)]
    measured, log = [], []

    def measure(trial, folder, limits, pinning):
        measured.append(trial.trial_id)
        return _busy_outcome(trial, 90.0) if trial.trial_id == "cfg-1c-p1-r0" else _outcome(trial)

    measure_rounds(BASE, pinned, 2, LIMITS, "here", log=log.append, measure=measure,
                   busy_now=lambda: 5.0 if quiet_by_then else 80.0)
    assert len(measured) == 2 * len(pinned) + quiet_by_then
    if quiet_by_then:
        assert measured[-1] == "cfg-1c-p1-r0-again", "measured again after the last round"
    else:
        rule = BusyRule(BASE.measurement.busy_other_cpu_pct, lambda: 80.0)
        assert not rule.may_measure_again()
        assert log[-1] == f"busy measurements not measured again: {rule.skipped}"


def test_one_module_hashes_json_into_fingerprints():
    """Four modules hashed sorted JSON themselves, at two lengths (design review 2026-11-26); the lengths stay (they
    are stored in results), the producer is pipebench.fingerprint."""
    import hashlib
    import json
    import re
    from pathlib import Path

    from pipebench.fingerprint import ID_HEX_DIGITS, fingerprint

    obj = {"b": [1, 2], "a": "é"}
    assert fingerprint(obj) == hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]
    assert len(fingerprint(obj, ID_HEX_DIGITS)) == 12 and fingerprint(obj, 64, compact=True) == hashlib.sha256(
        json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    root = Path(__file__).resolve().parents[1]
    hashing = [str(p.relative_to(root)) for p in sorted(root.glob("pipebench/**/*.py"))
               if re.search(r"sha256\((json\.dumps|canonical)", p.read_text()) and p.name != "fingerprint.py"]
    assert hashing == []


def test_capacity_measures_no_busy_prefix_again_when_the_run_said_not_to():
    """measurement.remeasure_busy: false held for the trial loop only; capacity measured busy prefixes again anyway."""
    import dataclasses

    from test_capacity_profile import BASE, LIMITS, SPEC, _busy_outcome

    from pipebench.pipeline.prefixes import prefixes
    from pipebench.capacity.profile import PinnedPrefix, measure_rounds
    from pipebench.pinning import Pinning

    base = dataclasses.replace(BASE, measurement=dataclasses.replace(BASE.measurement, remeasure_busy=False))
    pinned = [PinnedPrefix(Pinning((0,)), p) for p in prefixes(SPEC)]
    measured = []

    def measure(trial, folder, limits, pinning):
        measured.append(trial.trial_id)
        return _busy_outcome(trial, 90.0)

    values = measure_rounds(base, pinned, 2, LIMITS, "here", log=lambda text: None, measure=measure,
                            busy_now=lambda: 0.0)
    assert len(measured) == 2 * len(pinned) and all(v.busy for found in values for v in found)
