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
