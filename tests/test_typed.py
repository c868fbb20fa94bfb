"""Strict records: a missing, unknown or mistyped key is an error naming the file and the key path."""
from __future__ import annotations

import json

import pytest

from pipebench.errors import DataError, ResultsVersionError
from pipebench.measure.facts import FACTS_VERSION, MachineFacts, upgrade_v1
from pipebench.measure.trial import TrialRecord, TrialStatus
from pipebench.testing import windows_at
from pipebench.typed import from_json, to_json


def test_a_record_round_trips_and_refuses_unknown_missing_and_mistyped_keys():
    record = TrialRecord(TrialStatus.OK, examples_per_sec_median=1.5, window_rates=(1.0, 2.0),
                         windows_measured=windows_at("input", [1.0, 2.0]), env_seen={"OMP_NUM_THREADS": None})
    data = json.loads(json.dumps(to_json(record)))
    assert from_json(TrialRecord, data, "result.json") == record
    with pytest.raises(DataError, match=r"^result.json: bogus: unknown key"):
        from_json(TrialRecord, {**data, "bogus": 1}, "result.json")
    with pytest.raises(DataError, match=r"^result.json: auc: missing$"):
        from_json(TrialRecord, {k: v for k, v in data.items() if k != "auc"}, "result.json")
    with pytest.raises(DataError, match=r"^result.json: windows: must be int, not bool True$"):
        from_json(TrialRecord, {**data, "windows": True}, "result.json")
    with pytest.raises(DataError, match=r"^result.json: status: must be one of ok, failed"):
        from_json(TrialRecord, {**data, "status": "fine"}, "result.json")
    with pytest.raises(DataError, match=r"^result.json: window_rates\[1\]: must be float"):
        from_json(TrialRecord, {**data, "window_rates": [1.0, "x"]}, "result.json")


def test_statuses_say_once_which_spend_the_failure_budget_and_what_optuna_is_told():
    spend = {s.value for s in TrialStatus if s.counts_as_failure}
    assert spend == {"failed", "timeout", "memory_cap", "invalid"}
    assert TrialStatus.UNAVAILABLE.optuna_state == "FAIL" and TrialStatus.PRUNED.optuna_state == "PRUNED"
    assert TrialStatus.OK.optuna_state == "COMPLETE"


def test_machine_facts_of_the_old_layout_say_upgrade_and_the_upgrade_reads(tmp_path):
    old = {"collected_at": "2026-01-01T00:00:00+00:00", "pipebench_version": "0.1.0",
           "cpu": {"model": "X", "sockets": 1, "physical_cores": 2, "online_cpus": 2, "vcpus": 2,
                   "physical_cores_in_affinity": 2, "isa": []},
           "memory_bytes": 1 << 30, "os": {"system": "Linux", "kernel": "6", "distribution": None},
           "python": {"version": "3.11", "implementation": "CPython", "executable": "/p"},
           "tensorflow": {"importable": False, "error": "tensorflow is not installed",
                          "onednn": {"enabled": None, "build_default": None, "env": None, "statement": "unknown"},
                          "openmp": {"linked": None, "runtimes": [], "statement": "unknown"},
                          "sagemaker_tensorflow": {"importable": False, "reason": "no"}},
           "gpu": {"count": 0, "devices": [], "driver_version": None, "reason": "no NVML"},
           "sagemaker": {"instance_type": None, "instance_type_source": None, "in_training_job": False,
                         "current_host": None, "hosts": 3, "num_cpus": None, "num_gpus": None},
           "host_fingerprint": "abc"}
    path = tmp_path / "run" / "machine.json"
    path.parent.mkdir()
    path.write_text(json.dumps(old))
    with pytest.raises(ResultsVersionError, match=rf"machine.json: layout 1 \(no schema_version\) is older "
                                                  rf"than the {FACTS_VERSION} this pipebench reads: run `pipebench upgrade .*run`"):
        MachineFacts.load(path)
    facts = MachineFacts.from_json(upgrade_v1(old), "machine.json")
    assert facts.sagemaker.host_count == 3 and facts.cpu.vcpus == 2 and facts.tensorflow.version is None
