"""Source mode `service` without TensorFlow: how the grid labels its trials, what its rows record, the
server's command line."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pipebench.config import parse_experiment
from pipebench.datasets import DataSet
from pipebench.search.candidates import candidates
from pipebench.search.grid import trials


def _experiment(**service) -> object:
    return parse_experiment({"name": "x", "modes": ["input"],
                             "pipelines": {"presets": ["aws-sample"], "source_modes": ["file", "service"]},
                             "sources": {"service": service}})


DATA = DataSet({"tfrecord": ["a.tfrecord", "b.tfrecord"]})


@pytest.mark.parametrize("service,semantics,breaks", [
    ({"sharding_policy": "OFF", "workers": 2}, "reference, service-repeats-per-worker", True),
    ({"sharding_policy": "OFF", "workers": 1}, "reference", False),
    ({"sharding_policy": "DYNAMIC", "workers": 2}, "reference, service-at-most-once", False),
    ({"sharding_policy": "FILE", "workers": 2}, "reference, service-exactly-once", False),
    ({"sharding_policy": "DATA", "workers": 2}, "reference, service-exactly-once", False),
])
def test_service_trials_carry_the_sharding_semantics_label(service, semantics, breaks):
    file_mode, served = candidates(_experiment(**service), DATA)
    assert file_mode.label().semantics == "reference" and served.spec.source.mode == "service"
    label = served.label()
    assert (label.semantics, label.breaks_semantics, label.source_mode) == (semantics, breaks, "service")
    assert f"{service['workers']} worker" in label.semantics_why and service["sharding_policy"] in label.semantics_why


def test_a_service_row_records_its_settings_and_other_rows_none():
    from pipebench.results.rows import COLUMNS

    planned = trials(_experiment(sharding_policy="FILE", workers=2, max_outstanding_requests=4), DATA)
    found = {t.label.source_mode: t for t in planned}

    class Context:  # the column reads only the TrialSpec
        def __init__(self, spec):
            self.spec = spec

    settings = json.loads(COLUMNS["service_json"](Context(found["service"])))
    assert settings["sharding_policy"] == "FILE" and settings["workers"] == 2
    assert settings["max_outstanding_requests"] == 4 and settings["split_before"] == "prefetch"
    assert COLUMNS["service_json"](Context(found["file"])) is None


@pytest.mark.slow
@pytest.mark.parametrize("args,says", [
    (["worker", "--port", "1"], "a worker needs --dispatcher HOST:PORT"),
    (["worker", "--port", "1", "--dispatcher", "h:2", "--worker-addresses", "h:1"], "--worker-addresses is the "
                                                                                    "dispatcher's"),
])
def test_the_server_refuses_a_worker_command_it_cannot_run(args, says):
    done = subprocess.run([sys.executable, "-m", "pipebench.sources.service_server", *args], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and says in done.stderr


def test_the_service_experiment_plans_file_and_service_trials_in_both_modes():
    from pathlib import Path

    from pipebench.config import load_experiment

    experiment = load_experiment(Path(__file__).parent.parent / "experiments" / "service.yaml")
    planned = trials(experiment, DATA)
    assert {(t.mode, t.label.source_mode) for t in planned} == {(m, s) for m in ("input", "train")
                                                               for s in ("file", "service")}
