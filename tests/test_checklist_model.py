"""The checklist's projections from the per-stage model (run folders with capacity.json), its error against
measured machines, and old folders without capacity.json projected linearly as before. No TensorFlow."""
from __future__ import annotations

import dataclasses
import json

import pytest
from capacity_fixtures import profile, write_capacity
from report_fixtures import (
    CATALOG_C5,
    machine,
    make_run,
    passing_configurations,
    rows_of,
)

import pipebench.results as results
from pipebench.capacity.model import TRANSFER_ASSUMPTION
from pipebench.catalog import load_catalog
from pipebench.report.service_sizing import service_workers
from pipebench.report.checklist_markdown import to_markdown
from pipebench.report.ranking import ranking
from pipebench.report.checklist_records import CHECKLIST_VERSION, Checklist
from pipebench.typed import to_json

# The profiled pipeline: one reader (1 µs/example, sequential) and decode (4 µs): 800k ex/s on 4 vCPUs,
# 1M on 8 (the reader's one core caps it).
STAGES = [("source", 1e-6, True), ("decode", 4e-6, False)]
CATALOG = CATALOG_C5 + """\
  ml.g4dn.xlarge: {family: g4dn, vcpus: 4, physical_cores: 2, memory_gib: 16, gpus: 1, price_per_hour: 0.75,
                   accelerator_rate: {examples_per_sec: 300000, source: "https://example.org/g4dn"}}
  ml.g5.xlarge:   {family: g5, vcpus: 4, physical_cores: 2, memory_gib: 16, gpus: 1, price_per_hour: 1.4}
"""


def _catalog(tmp_path):
    (tmp_path / "catalog.yaml").write_text(CATALOG)
    return load_catalog(tmp_path / "catalog.yaml")


def _run(tmp_path, name: str, vcpus: int, input_speed: float, capacity: bool):
    configs = {n: c | {"run_id": name} for n, c in passing_configurations([]).items()}
    configs["t-input-tfr"]["examples_per_sec"] = input_speed
    rows = [dataclasses.replace(r, instance_type=name) for r in rows_of(configs, [])]
    run_dir = make_run(tmp_path / name, rows, machine(vcpus=vcpus, physical_cores=vcpus // 2, instance_type=name))
    if capacity:
        write_capacity(run_dir, profile(STAGES, spread=0.05, configuration_id="t-input-tfr", cores=2))
    return results.load(run_dir)


def _markdown(rank) -> str:
    """Give the checklist's Markdown of a ranking alone."""
    return to_markdown(Checklist(CHECKLIST_VERSION, (), rank, service_workers([]), ()))


def test_projections_use_the_model_when_a_run_is_profiled(tmp_path):
    runs = [_run(tmp_path, "ml.c5.xlarge", 4, 790_000.0, capacity=True)]
    rank = to_json(ranking(runs, _catalog(tmp_path), 1_000_000))
    assert rank["projected_by"] == "per-stage model"
    found = {e["instance_type"]: e for e in rank["projected"]}
    assert set(found) == {"ml.c5.2xlarge", "ml.c5.4xlarge", "ml.g4dn.xlarge", "ml.g5.xlarge"}
    big = found["ml.c5.4xlarge"]
    assert big["examples_per_sec"]["mean"] == pytest.approx(1_000_000) and big["bottleneck"] == "source"
    assert big["examples_per_sec"]["low"] < 1_000_000 < big["examples_per_sec"]["high"]
    assert big["assumption"].startswith("input capacity alone on 16 vCPUs") and TRANSFER_ASSUMPTION in big["assumption"]
    gpu = found["ml.g4dn.xlarge"]  # the catalog's accelerator rate caps the input's 800k
    assert gpu["examples_per_sec"]["mean"] == pytest.approx(300_000)
    assert "accelerator rate 300,000 ex/s (https://example.org/g4dn)" in gpu["assumption"]
    assert gpu["cost_per_epoch"] == pytest.approx(1_000_000 / 300_000 / 3600 * 0.75, abs=1e-6)  # rounded to 6 places
    assert found["ml.g5.xlarge"]["examples_per_sec"]["mean"] == pytest.approx(800_000)  # no rate: input alone, says so
    assert "an upper bound on train throughput" in found["ml.g5.xlarge"]["assumption"]


def test_the_model_error_against_each_measured_machine(tmp_path):
    runs = [_run(tmp_path, "ml.c5.xlarge", 4, 790_000.0, capacity=True),
            _run(tmp_path, "ml.c5.2xlarge", 8, 950_000.0, capacity=False)]
    rank = to_json(ranking(runs, _catalog(tmp_path), 1_000_000))
    errors = {e["instance_type"]: e for e in rank["model_error"]}
    error = errors["ml.c5.2xlarge"]["error_pct"]
    assert error["mean"] == pytest.approx(100 * (1_000_000 / 950_000 - 1), rel=1e-3)
    assert errors["ml.c5.2xlarge"]["mode"] == "input" and not errors["ml.c5.2xlarge"]["profiled_here"]
    assert error["low"] < error["mean"] < error["high"]
    assert errors["ml.c5.xlarge"]["profiled_here"]
    assert errors["ml.c5.xlarge"]["error_pct"]["mean"] == pytest.approx(100 * (800_000 / 790_000 - 1), rel=1e-3)
    text = _markdown(ranking(runs, _catalog(tmp_path), 1_000_000))
    assert "## Projections (not measured) — per-stage model" in text
    assert "## The per-stage model against measurements" in text
    assert "| ml.c5.2xlarge | " in text and "| 8 | input | 1,000,000 (" in text and "| +5.3% (" in text
    assert "(profiled here: in-sample)" in text


def test_folders_without_capacity_json_project_linearly_as_before(tmp_path):
    runs = [_run(tmp_path, "ml.c5.xlarge", 4, 790_000.0, capacity=False)]
    rank = to_json(ranking(runs, _catalog(tmp_path), 1_000_000))
    assert rank["projected_by"] == "linear" and rank["model_error"] == []
    train = runs[0]  # the fastest train configuration, 40k ex/s on 2 physical cores, scaled per physical core
    assert {e["instance_type"]: e["examples_per_sec"]["mean"] for e in rank["projected"]} == pytest.approx(
        {"ml.c5.2xlarge": 80_000, "ml.c5.4xlarge": 160_000}, rel=2e-3)
    assert all(e["model"] == "linear" and e["bottleneck"] is None and e["examples_per_sec"]["n"] == 0
               for e in rank["projected"])
    text = _markdown(ranking(runs, _catalog(tmp_path), 1_000_000))
    assert "## Projections (not measured) — linear per-core scaling" in text and "against measurements" not in text
    assert train.capacity is None


def test_cli_json_carries_the_model_rows(tmp_path, cli):
    run = _run(tmp_path, "ml.c5.xlarge", 4, 790_000.0, capacity=True)
    _catalog(tmp_path)
    code, out, err = cli("checklist", run.run_dir, "--format", "json", "--catalog", tmp_path / "catalog.yaml")
    assert code == 0, err
    doc = json.loads(out)["ranking"]
    assert doc["projected_by"] == "per-stage model" and doc["model_error"][0]["profiled_here"]


def test_a_configuration_profiled_on_several_core_counts_projects_from_the_most_cores(tmp_path):
    run = _run(tmp_path, "ml.c5.xlarge", 4, 790_000.0, capacity=False)
    cheap = profile([("source", 1e-6, True), ("decode", 2e-6, False)], configuration_id="t-input-tfr", cores=1)
    wide = profile(STAGES, configuration_id="t-input-tfr", cores=2)
    write_capacity(run.run_dir, cheap, wide)
    rank = to_json(ranking([results.load(run.run_dir)], _catalog(tmp_path), 1_000_000))
    found = {e["instance_type"]: e for e in rank["projected"]}
    assert found["ml.g5.xlarge"]["examples_per_sec"]["mean"] == pytest.approx(800_000)  # 4 / 5 µs, not 4 / 3 µs
    assert "profiled on 2 pinned CPU(s)" in found["ml.g5.xlarge"]["assumption"]
    # 3 µs per example on one pinned CPU, 5 on two: the projection to more vCPUs says it is likely optimistic
    assert "likely optimistic: its per-example CPU grew ×1.67 (" in found["ml.g5.xlarge"]["assumption"]
    assert "from 1 to 2 pinned CPUs where profiled" in found["ml.g5.xlarge"]["assumption"]
    assert found["ml.g5.xlarge"]["busy_machine"] is False
    assert sorted(e["error_pct"]["mean"] > 0 for e in rank["model_error"]) == [True, True]  # both profiles' errors shown


def test_a_projection_with_no_upper_end_says_so(tmp_path):
    run = _run(tmp_path, "ml.c5.xlarge", 4, 790_000.0, capacity=False)
    write_capacity(run.run_dir, profile(STAGES, spread=0.5, rounds=2, configuration_id="t-input-tfr"))
    typed = ranking([results.load(run.run_dir)], _catalog(tmp_path), 1_000_000)
    rank = json.loads(json.dumps(to_json(typed), allow_nan=False))
    found = {e["instance_type"]: e for e in rank["projected"]}["ml.g5.xlarge"]
    assert found["examples_per_sec"]["low"] is not None and found["examples_per_sec"]["high"] is None
    assert "; no upper end) |" in _markdown(typed)


def test_a_projection_from_a_profile_with_busy_measurements_is_flagged(tmp_path):
    run = _run(tmp_path, "ml.c5.xlarge", 4, 790_000.0, capacity=False)
    write_capacity(run.run_dir, profile(STAGES, configuration_id="t-input-tfr", busy_rounds=2))
    rank = to_json(ranking([results.load(run.run_dir)], _catalog(tmp_path), 1_000_000))
    found = {e["instance_type"]: e for e in rank["projected"]}["ml.g5.xlarge"]
    assert found["busy_machine"] is True and "2 of its prefix measurements shared a busy machine" in found["assumption"]
    assert "likely optimistic" not in found["assumption"]  # one core count: nothing measured says how costs move
