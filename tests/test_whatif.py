"""`pipebench whatif`: a hand-made run folder with a hand-made capacity.json (typed records), no TensorFlow."""
from __future__ import annotations

import dataclasses
import json
import math

import pytest
from capacity_fixtures import profile, write_capacity
from report_fixtures import machine, make_run, passing_configurations, rows_of

import pipebench.results as results
from pipebench.capacity.model import TRANSFER_ASSUMPTION, predict
from pipebench.catalog import USER_SUPPLIED, accelerator_rates, load_catalog
from pipebench.report.whatif import InstanceWhatIf, WhatIf, to_text, whatif
from pipebench.typed import from_json, to_json

# A single reader (1 µs/example: 1M ex/s on its one core), decode 15 µs, batch free: 16 µs in all.
STAGES = [("source", 1e-6, True), ("decode", 15e-6, False), ("batch", 0.0, False)]
CATALOG = load_catalog()
ROWS = 100_000


def _run(tmp_path, instance_type: str | None = "ml.c5.xlarge", capacity: bool = True, **kwargs):
    """Give a run measured on `instance_type` (its train trials' synthetic arm: 40,000 ex/s without the step's 1%
    wait for input, 40,404 ex/s, at batch 1024)."""
    configs = passing_configurations([])
    rows = [dataclasses.replace(r, instance_type=instance_type) for r in rows_of(configs, [])]
    run_dir = make_run(tmp_path / "run", rows, machine(instance_type=instance_type), rows_per_epoch=ROWS)
    if capacity:
        write_capacity(run_dir, profile(STAGES, **kwargs))
    return results.load(run_dir)


def _by_type(result: WhatIf) -> dict[str, InstanceWhatIf]:
    (found,) = result.profiles
    return {e.instance_type: e for e in found.instances}


def test_each_type_gets_input_train_feed_and_cost(tmp_path):
    rates = accelerator_rates(["ml.p3.2xlarge=2.1e6"], CATALOG)
    result = whatif(_run(tmp_path, spread=0.05), CATALOG, ["ml.c5.xlarge", "ml.c5.2xlarge", "ml.p3.2xlarge"], rates)
    found = _by_type(result)
    here = found["ml.c5.xlarge"]  # the run's own type: its synthetic trials are the compute ceiling
    speed = here.input.examples_per_sec
    assert speed.mean == pytest.approx(4 / 16e-6) and here.input.bottleneck == "cores"
    assert speed.low < speed.mean < speed.high
    assert here.compute_ceiling.examples_per_sec.mean == pytest.approx(40_000 / 0.99, rel=0.02)
    assert here.compute_ceiling.source.startswith("measured: the run's synthetic trials on ml.c5.xlarge")
    assert here.train.examples_per_sec.mean == pytest.approx(here.compute_ceiling.examples_per_sec.mean)
    assert here.train.bound_by == "compute" and here.ranked_on == "train"
    assert here.cost_per_epoch.mean == pytest.approx(ROWS / here.train.examples_per_sec.mean / 3600 * 0.204)
    p3 = found["ml.p3.2xlarge"]  # 8 vCPUs: 500k ex/s of input against a 2.1M ceiling the user gave
    assert to_json(p3.compute_ceiling) == {"examples_per_sec": {"mean": 2.1e6, "low": None, "high": None, "n": 0},
                                           "source": USER_SUPPLIED}
    assert p3.train.examples_per_sec.mean == pytest.approx(8 / 16e-6) and p3.train.bound_by == "input (cores)"
    assert p3.feed.unavailable == "no number of vCPUs feeds it: source caps at 1,000,000 ex/s"
    other = found["ml.c5.2xlarge"]  # neither measured there nor given: ranked on input capacity alone
    assert other.ranked_on.startswith("input capacity alone") and "--accelerator-rate ml.c5.2xlarge=" in \
        other.ranked_on
    assert other.train is None and other.unavailable == {"compute_ceiling": "neither measured on this type nor given",
                                                         "train": "no compute ceiling"}
    assert other.cost_per_epoch.mean == pytest.approx(ROWS / (8 / 16e-6) / 3600 * 0.408)
    assert [e.instance_type for e in result.profiles[0].instances][-1] == "ml.c5.2xlarge"
    assert result.assumption == TRANSFER_ASSUMPTION


def test_feeding_a_rate_needs_vcpus_of_the_heaviest_stage(tmp_path):
    found = _by_type(whatif(_run(tmp_path), CATALOG, ["ml.c5.xlarge"], feed=300_000.0, train_cores=1.0))
    feed = found["ml.c5.xlarge"].feed
    assert feed.rate_from == "--feed" and feed.heaviest_stage == "decode"
    assert feed.vcpus.mean == pytest.approx(300_000 * 16e-6 + 1.0)  # the train step's core included
    assert feed.stage_vcpus["decode"] == pytest.approx(4.5) and feed.fits is False
    assert found["ml.c5.xlarge"].input.examples_per_sec.mean == pytest.approx(3 / 16e-6)  # 4 vCPUs less the train step's 1


def test_no_rate_to_feed_without_a_ceiling_or_feed(tmp_path):
    found = _by_type(whatif(_run(tmp_path, instance_type=None), CATALOG, ["ml.c5.xlarge"]))
    feed = found["ml.c5.xlarge"].feed
    assert feed.rate is None and feed.unavailable == "no rate to feed: no compute ceiling for this type (pass --feed RATE)"


def test_train_cores_that_leave_no_vcpu_make_the_type_unavailable(tmp_path):
    found = _by_type(whatif(_run(tmp_path), CATALOG, ["ml.c5.xlarge", "ml.c5.2xlarge"], train_cores=4.0))
    assert found["ml.c5.xlarge"].input is None
    assert found["ml.c5.xlarge"].unavailable["input"] == "--train-cores 4 leaves none of its 4 vCPUs for input"
    assert found["ml.c5.2xlarge"].input.examples_per_sec.mean == pytest.approx(4 / 16e-6)


def test_a_catalog_rate_says_its_source(tmp_path):
    path = tmp_path / "catalog.yaml"
    path.write_text("region: r\nprices_as_of: x\ncurrency: USD\ninstances:\n  ml.g5.xlarge: {family: g5, vcpus: 4, "
                    "physical_cores: 2, memory_gib: 16, gpus: 1, price_per_hour: 1.4, accelerator_rate: "
                    "{examples_per_sec: 100000, source: 'https://example.org/deepfm-g5'}}\n")
    found = _by_type(whatif(_run(tmp_path), load_catalog(path)))
    assert found["ml.g5.xlarge"].compute_ceiling.source == "https://example.org/deepfm-g5"
    assert found["ml.g5.xlarge"].train.examples_per_sec.mean == pytest.approx(100_000)


def test_no_interval_on_the_profile_gives_none_on_the_prediction(tmp_path):
    found = _by_type(whatif(_run(tmp_path, rounds=1), CATALOG, ["ml.c5.2xlarge"]))["ml.c5.2xlarge"]
    assert found.input.examples_per_sec.low is None and found.input.examples_per_sec.n == 1
    assert found.cost_per_epoch.low is None


def test_cli_prints_the_assumption_the_sections_and_feeding(tmp_path, cli):
    run = _run(tmp_path, spread=0.05)
    code, out, err = cli("whatif", run.run_dir, "--instance-type", "ml.c5.xlarge", "ml.p3.2xlarge",
                         "--instance-type", "ml.c5.2xlarge", "--accelerator-rate", "ml.p3.2xlarge=2.1e6",
                         "--feed", "200000")
    assert code == 0, err
    assert TRANSFER_ASSUMPTION in out
    assert "Ranked on predicted train throughput = min(compute ceiling, input):" in out
    assert "Ranked on input capacity alone" in out
    assert "- ml.c5.xlarge: feeding 200k ex/s (--feed) needs ~3.2 (3.0–3.4) vCPUs, most of them for decode (3.0); it has 4\n" in out
    assert "user-supplied (--accelerator-rate)" in out
    code, out, _ = cli("whatif", run.run_dir, "--json", "--instance-type", "ml.c5.xlarge")
    doc = json.loads(out)
    assert code == 0 and doc["schema_version"] == 2 and set(doc) >= {"profiles", "assumption", "epoch_examples"}
    (entry,) = doc["profiles"][0]["instances"]
    assert entry["instance_type"] == "ml.c5.xlarge" and set(entry["input"]["examples_per_sec"]) == {"mean", "low",
                                                                                                      "high", "n"}
    assert from_json(WhatIf, doc, "whatif --json") == whatif(run, CATALOG, ["ml.c5.xlarge"])  # read back whole


def test_a_profile_measured_on_a_busy_machine_says_so(tmp_path, cli):
    code, out, err = cli("whatif", _run(tmp_path, spread=0.05, busy_rounds=2).run_dir, "--instance-type", "ml.c5.xlarge")
    assert code == 0, err
    assert "; 2 of its prefix measurements shared the machine with busy processes even when measured again" in out
    code, out, _ = cli("whatif", tmp_path / "run", "--json", "--instance-type", "ml.c5.xlarge")
    assert json.loads(out)["profiles"][0]["busy_rounds"] == 2


def test_a_folder_without_capacity_json_loads_as_before(tmp_path):
    assert _run(tmp_path, capacity=False).capacity is None


def test_a_cost_interval_reaching_zero_gives_no_upper_end_and_valid_json(tmp_path):
    """Two wildly different rounds: the whole pipeline's CPU interval reaches below 0, so throughput has no upper
    end; JSON has no infinity, so `high` is null beside a `low`, and the text says so."""
    run = _run(tmp_path, spread=0.5, rounds=2)
    assert math.isinf(predict(run.capacity.profiles[0], 8).examples_per_sec.high)
    result = whatif(run, CATALOG, ["ml.c5.2xlarge"])
    doc = json.loads(json.dumps(result.to_json(), allow_nan=False))
    found = _by_type(result)["ml.c5.2xlarge"].input.examples_per_sec
    assert found.low is not None and math.isinf(found.high)
    written = doc["profiles"][0]["instances"][0]["input"]["examples_per_sec"]
    assert written["low"] == found.low and written["high"] is None
    assert from_json(WhatIf, doc, "whatif") == result  # a null high above a low end reads back as no upper end
    assert "(at least " in to_text(result) and "; no upper end)" in to_text(result)


def _costs(scale: float) -> list:
    return [(name, cost * scale, sequential) for name, cost, sequential in STAGES]


def test_profiles_at_two_core_counts_say_how_per_example_cpu_moved_and_when_predictions_are_optimistic(tmp_path):
    run_dir = _run(tmp_path, capacity=False).run_dir
    write_capacity(run_dir, profile(_costs(1.0), cores=1, spread=0.02), profile(_costs(1.5), cores=2, spread=0.02))
    result = whatif(results.load(run_dir), CATALOG, ["ml.c5.xlarge"])
    for found in result.profiles:  # each profile of the configuration carries the same comparison
        growth = found.scaling.cpu_growth
        assert growth.low < 1.5 < growth.high and growth.low > 1
        assert found.scaling.from_cores == 1 and found.scaling.to_cores == 2
    text = to_text(result)
    assert "Per-example CPU from 1 to 2 cores: ×1.50" in text
    assert "predictions for more vCPUs than 2 are likely optimistic" in text
    assert "1 pinned CPU: 62,50" in text and "ex/s at 16.00 (" in text and "2 pinned CPUs: 83,34" in text
    assert "ex/s at 24.00 (" in text


def test_a_growth_the_intervals_cannot_tell_from_none_is_not_called_one(tmp_path):
    run_dir = _run(tmp_path, capacity=False).run_dir
    write_capacity(run_dir, profile(_costs(1.0), cores=1, spread=0.1), profile(_costs(1.02), cores=2, spread=0.1),
                   profile(_costs(1.0), cores=4, configuration_id="cfg-b"))
    result = whatif(results.load(run_dir), CATALOG, ["ml.c5.xlarge"])
    by_config = {p.configuration_id: p.scaling for p in result.profiles}
    assert by_config["cfg-b"] is None  # one core count: nothing to compare
    assert "no change the intervals can tell" in to_text(result) and "likely optimistic" not in to_text(result)
