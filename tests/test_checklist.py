"""The pre-migration checklist: each rule PASSes and FAILs on hand-made runs (golden JSON), the cost
ranking's arithmetic, projections kept apart from measurements, catalog validation, the CLI."""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
from report_fixtures import (
    CATALOG_C5,
    SCALAR,
    VECTORIZED,
    configuration,
    data_files,
    job_record,
    machine,
    make_run,
    passing_configurations,
    passing_rows,
    rows_of,
    trial,
)
from sharding_fixtures import sharding_record, write_record

import pipebench.results as results
from pipebench.catalog import DEFAULT_CATALOG, load_catalog
from pipebench.datasets import DATA_VERSION, DataFacts
from pipebench.errors import ConfigError
from pipebench.measure.machine import sagemaker_facts
from pipebench.report.checklist import RULES, checklist
from pipebench.report.ranking import epoch_examples_of, ranking
from pipebench.report.checklist_records import Checklist
from pipebench.typed import from_json, to_json

GOLDEN = Path(__file__).parent / "golden" / "checklist_rules.json"


def _change(configs: dict, name: str, **values) -> None:
    configs[name].update(values)


def _every(configs: dict, **values) -> None:
    for kwargs in configs.values():
        kwargs.update(values)


BAD_ORDER = SCALAR[1:3] + SCALAR[:1] + [{"repeat": {"epochs": None}}, {"cache": "memory"}, {"prefetch": "AUTOTUNE"}]
#: rule id → how to turn the passing run into one on which that rule FAILs: (configurations, facts) → None.
FAILING = {
    "input_bound": lambda configs, facts: _change(configs, "t-train-tfr", waiting=0.5),
    "gpu_utilization": lambda configs, facts: _change(configs, "t-train-tfr", gpu_util_pct_median=30.0),
    "cpu_utilization": lambda configs, facts: _change(configs, "t-train-tfr", cpu_pct_of_physical_cores_median=30.0),
    "cache_fits_ram": lambda configs, facts: facts.update(memory_bytes=4500),
    "stage_order": lambda configs, facts: _change(configs, "t-train-tfr", stages=BAD_ORDER),
    "file_layout": lambda configs, facts: _every(configs, source_mode="pipe"),
    # the same pipeline measurably faster on libsvm than on TFRecord
    "tfrecord_gain": lambda configs, facts: _change(configs, "t-train-tfr-svm", examples_per_sec=48000),
    # decoding one example at a time measurably cheaper than whole batches, on the same format in input mode
    "vectorized_map": lambda configs, facts: _change(configs, "t-input-svm", examples_per_sec=200000),
    "openmp_knobs": lambda configs, facts: _change(configs, "t-train-tfr", env_KMP_AFFINITY="granularity=fine,compact,1,0"),
    "threads_vs_cores": lambda configs, facts: _every(configs, intra_op_threads=None),
    "batch_auc": lambda configs, facts: _change(configs, "t-train-big", auc=0.80),
    # two hosts, as machine facts record them from SageMaker's SM_HOSTS
    "scale_up_first": lambda configs, facts: facts["sagemaker"].update(
        host_count=sagemaker_facts(env={"SM_HOSTS": json.dumps(["algo-1", "algo-2"])})["host_count"]),
    # its failing record (one file for two workers: no FILE sharding) is written by _run
    "input_sharding": lambda configs, facts: None,
}


def _run(tmp_path, fail: str | None = None, **facts):
    files = data_files(tmp_path / "data")
    configs, found = passing_configurations(files), machine(**facts)
    if fail:
        FAILING[fail](configs, found)
    run_dir = make_run(tmp_path / "run", rows_of(configs, files), found)
    sharded = files[:1] if fail == "input_sharding" else files
    rates = {"data": 12000, "off": 11000, "shard-after-read": 13000, **({} if len(sharded) < 2 else {"file": 20000})}
    write_record(run_dir, sharding_record(sharded, 1000 * len(sharded), rates))
    return results.load(run_dir)


def _item(run, rule_id):
    (item,) = [rule(run) for rule in RULES if rule.__name__ == rule_id]
    return json.loads(json.dumps(to_json(item), allow_nan=False))  # as `checklist --format json` prints it


def test_every_rule_has_a_failing_case():
    assert sorted(FAILING) == sorted(rule.__name__ for rule in RULES)


@pytest.mark.parametrize("status", ["PASS", "FAIL"])
@pytest.mark.parametrize("rule_id", sorted(FAILING))
def test_rule_fires_as_golden(tmp_path, rule_id, status):
    item = _item([_run(tmp_path, None if status == "PASS" else rule_id)], rule_id)
    golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    key = f"{rule_id}:{status}"
    if os.environ.get("PIPEBENCH_UPDATE_GOLDEN"):
        golden[key] = item
        GOLDEN.write_text(json.dumps(golden, indent=2, sort_keys=True) + "\n")
    assert item["status"] == status, item
    assert item == golden[key]


def test_passing_run_passes_every_item(tmp_path):
    result = to_json(checklist([_run(tmp_path)], load_catalog(), 100000))
    assert [(i["id"], i["status"]) for i in result["items"]] == [(r.__name__, "PASS") for r in RULES]
    for item in result["items"]:
        assert set(item) == {"id", "title", "status", "evidence", "advice"} and item["advice"]


def test_rules_without_evidence_say_not_applicable(tmp_path):
    rows = configuration("t-synth", "synthetic", "synthetic", "libsvm", [], 41000, [])
    run = results.load(make_run(tmp_path / "run", rows, machine(vcpus=2, physical_cores=2)))
    statuses = {rule.__name__: rule([run]).status for rule in RULES}
    assert statuses.pop("openmp_knobs") == "PASS"  # a build fact, true with or without trials
    assert set(statuses.values()) == {"N/A"}, statuses


CATALOG = CATALOG_C5 + """\
  ml.m5.xlarge:   {family: m5, vcpus: 4, physical_cores: 2, memory_gib: 16, gpus: 0, price_per_hour: 0.25}
  ml.g4dn.xlarge: {family: g4dn, vcpus: 4, physical_cores: 2, memory_gib: 16, gpus: 1, price_per_hour: 0.75}
"""


def _instance_runs(tmp_path):
    runs = []
    for name, speed in (("ml.c5.xlarge", 40000.0), ("ml.c5.2xlarge", 100000.0), ("ml.g4dn.xlarge", 50000.0)):
        configs = passing_configurations([])
        _change(configs, "t-train-tfr", examples_per_sec=speed)
        rows = [dataclasses.replace(r, instance_type=name) for r in rows_of(configs, [])]
        runs.append(results.load(make_run(tmp_path / name, rows, machine(instance_type=name))))
    return runs


def test_ranking_arithmetic_and_order(tmp_path):
    (tmp_path / "catalog.yaml").write_text(CATALOG)
    rank = to_json(ranking(_instance_runs(tmp_path), load_catalog(tmp_path / "catalog.yaml"), 1_000_000))
    by_name = {e["instance_type"]: e for e in rank["measured"]}
    assert by_name["ml.c5.xlarge"]["epoch_sec"] == pytest.approx(25.0, rel=1e-4)  # 1e6 examples / 40k ex/s
    assert by_name["ml.c5.xlarge"]["cost_per_epoch"] == pytest.approx(25.0 / 3600 * 0.2, rel=1e-4)
    assert by_name["ml.c5.2xlarge"]["cost_per_epoch"] == pytest.approx(10.0 / 3600 * 0.4, rel=1e-4)
    assert by_name["ml.g4dn.xlarge"]["cost_per_epoch"] == pytest.approx(20.0 / 3600 * 0.75, rel=1e-4)
    speed = by_name["ml.c5.xlarge"]["examples_per_sec"]
    assert set(speed) == {"mean", "low", "high", "n"} and speed["low"] < 40000 < speed["high"]
    assert not any(e["busy_machine"] or e["note"] for e in rank["measured"])
    costs = [e["cost_per_epoch"] for e in rank["measured"]]
    assert costs == sorted(costs)
    assert (rank["region"], rank["prices_as_of"]) == ("us-east-1", "2024-06")


def test_projections_are_never_mixed_with_measured_rows(tmp_path):
    (tmp_path / "catalog.yaml").write_text(CATALOG)
    rank = to_json(ranking(_instance_runs(tmp_path), load_catalog(tmp_path / "catalog.yaml"), 1_000_000))
    measured = {e["instance_type"] for e in rank["measured"]}
    projected = {e["instance_type"] for e in rank["projected"]}
    assert measured == {"ml.c5.xlarge", "ml.c5.2xlarge", "ml.g4dn.xlarge"}
    assert projected == {"ml.c5.4xlarge", "ml.m5.xlarge"}  # CPU types only; GPUs are not projected from cores
    assert all("assumption" not in e for e in rank["measured"])
    assert all(e["model"] == "linear" and "linear" in e["assumption"] for e in rank["projected"])
    c5_4x = next(e for e in rank["projected"] if e["instance_type"] == "ml.c5.4xlarge")
    assert c5_4x["examples_per_sec"]["mean"] == pytest.approx(100000.0 / 4 * 8, rel=1e-4)  # nearest c5 size, per core
    m5 = next(e for e in rank["projected"] if e["instance_type"] == "ml.m5.xlarge")
    assert m5["examples_per_sec"]["mean"] == pytest.approx(40000.0, rel=1e-4) and "ml.c5.xlarge" in m5["assumption"]


def test_runs_on_different_data_are_refused(tmp_path, cli):
    first = make_run(tmp_path / "a", passing_rows([]), machine())
    second = make_run(tmp_path / "b", [dataclasses.replace(r, data_fingerprint="other") for r in passing_rows([])],
                      machine())
    code, _, err = cli("checklist", first, second)
    assert code == 1 and "different data sets" in err


def test_measured_type_missing_from_catalog_has_no_cost(tmp_path):
    (tmp_path / "catalog.yaml").write_text(CATALOG)
    rows = [dataclasses.replace(r, instance_type="ml.x9.huge") for r in passing_rows([])]
    run = results.load(make_run(tmp_path / "run", rows, machine(instance_type="ml.x9.huge")))
    rank = to_json(ranking([run], load_catalog(tmp_path / "catalog.yaml"), 1000))
    assert rank["measured"][0]["cost_per_epoch"] is None and rank["projected"] == []


def test_shipped_catalog_is_valid_and_covers_the_families():
    catalog = load_catalog()
    assert {i.family for i in catalog.instances.values()} >= {"c5", "m5", "p3", "g4dn", "g5", "p4d"}
    assert catalog.region and catalog.prices_as_of and DEFAULT_CATALOG.exists()


@pytest.mark.parametrize("text, message", [
    ("instances: {}\n", "missing region, prices_as_of, currency"),
    ("region: r\nprices_as_of: x\ncurrency: USD\ninstances: []\n", "instances: expected a non-empty mapping"),
    ("region: r\nprices_as_of: x\ncurrency: USD\ninstances:\n  ml.a: {family: a, vcpus: 2, physical_cores: 4, "
     "memory_gib: 1, gpus: 0, price_per_hour: 1}\n", "instances.ml.a: physical_cores (4) exceeds vcpus (2)"),
    ("region: r\nprices_as_of: x\ncurrency: USD\ninstances:\n  ml.a: {family: a, vcpus: 2, physical_cores: 1, "
     "memory_gib: 1, gpus: 0, price_per_hour: cheap}\n", "instances.ml.a.price_per_hour: expected a non-negative number"),
    ("region: r\nprices_as_of: x\ncurrency: USD\ninstances:\n  ml.a: {family: a, vcpus: 2}\n",
     "instances.ml.a: missing physical_cores, memory_gib, gpus, price_per_hour"),
    ("region: r\nprices_as_of: x\ncurrency: USD\ninstances:\n  ml.a: {family: a, vcpus: 2, physical_cores: 1, "
     "memory_gib: 1, gpus: 0, price_per_hour: 1, colour: red}\n", "unknown key(s) colour"),
    ("region: [unclosed\n", "not valid YAML"),
])
def test_catalog_errors_name_the_problem(tmp_path, text, message):
    path = tmp_path / "catalog.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=None) as error:
        load_catalog(path)
    assert message in str(error.value) and str(path) in str(error.value)


def test_cli_json_is_the_documented_shape(tmp_path, cli):
    run = _run(tmp_path)
    code, out, _ = cli("checklist", run.run_dir, "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert set(doc) == {"schema_version", "items", "ranking", "service", "migration"} and doc["schema_version"] == 2
    made = checklist([run], load_catalog(), 100000)
    assert to_json(made) == doc  # evidence is each rule's own, so it reads back as plain JSON; the rest typed:
    assert from_json(Checklist, doc, "checklist --format json").ranking == made.ranking
    assert set(doc["ranking"]) >= {"measured", "projected", "epoch_examples", "region", "prices_as_of"}
    assert doc["ranking"]["epoch_examples"] == 100000
    assert {m["id"] for m in doc["migration"]} >= {"tf_config_chief", "shared_checkpoints", "estimator_removed",
                                                   "strategy_scope"}


def test_cli_markdown_separates_projections_and_reports_bad_catalog(tmp_path, cli):
    run = _run(tmp_path)
    code, out, _ = cli("checklist", run.run_dir)
    assert code == 0 and "## Projections (not measured)" in out and "TF1 → TF2" in out
    (tmp_path / "bad.yaml").write_text("region: x\n")
    code, _, err = cli("checklist", run.run_dir, "--catalog", tmp_path / "bad.yaml")
    assert code == 1 and "missing prices_as_of, currency, instances" in err


def test_every_migration_item_names_a_helper_that_exists():
    import importlib
    from pathlib import Path

    from pipebench.report.checklist import MIGRATION

    root = Path(__file__).resolve().parents[1]
    for item in MIGRATION:
        target = item.helper.split()[0]
        if target == "pipebench" or "/" in target:  # a command (`pipebench pipelines export`) or a file
            assert target == "pipebench" or (root / target).exists(), item
            continue
        module, _, name = target.rpartition(".")
        assert hasattr(importlib.import_module(module), name), item


def test_file_layout_ranks_source_modes_measured_side_by_side(tmp_path):
    files = data_files(tmp_path / "data")
    configs = passing_configurations(files)
    configs["t-train-tfr-pipe"] = configs["t-train-tfr"] | {"source_mode": "pipe", "examples_per_sec": 20000}
    item = _item([results.load(make_run(tmp_path / "run", rows_of(configs, files), machine()))], "file_layout")
    assert item["status"] == "PASS"
    assert item["evidence"]["examples_per_sec_by_source_mode"]["pipe"] == pytest.approx(20000, rel=1e-3)
    assert "file mode is fastest (pipe 50% of it)" in item["advice"]


def test_each_row_is_judged_against_its_own_runs_machine(tmp_path):
    """The checklist took runs[0]'s machine for every row, so one host's CPUs judged another's trials."""
    slow = rows_of({n: c | {"run_id": "small"} for n, c in passing_configurations([]).items()}, [])
    fast = rows_of({n: c | {"run_id": "big", "examples_per_sec": c["examples_per_sec"] * 3}
                    for n, c in passing_configurations([]).items()}, [])
    runs = [results.load(make_run(tmp_path / "small", slow, machine(vcpus=2, physical_cores=1))),
            results.load(make_run(tmp_path / "big", fast, machine(vcpus=96, physical_cores=48)))]
    item = _item(runs, "cpu_utilization")
    assert (item["evidence"]["vcpus"], item["evidence"]["physical_cores"]) == (96, 48)


def test_a_collected_folder_is_priced_per_instance_type(tmp_path):
    """A `sagemaker collect` folder holds one run folder per job; each is priced as its own instance type."""
    (tmp_path / "catalog.yaml").write_text(CATALOG)
    collected = tmp_path / "collected"
    jobs = []
    for name, speed in (("ml.c5.xlarge", 40000.0), ("ml.c5.2xlarge", 100000.0)):
        configs = {n: c | {"run_id": name} for n, c in passing_configurations([]).items()}
        _change(configs, "t-train-tfr", examples_per_sec=speed)
        rows = [dataclasses.replace(r, instance_type=name) for r in rows_of(configs, [])]
        make_run(collected / name / "File" / "algo-1", rows, machine(instance_type=name))
        jobs.append(job_record(name, f"{name}/File/algo-1"))
    (collected / "jobs.json").write_text(json.dumps(jobs))
    rank = to_json(ranking(results.load_many([collected], allow_mixed=True), load_catalog(tmp_path / "catalog.yaml"), 10**6))
    assert {e["instance_type"]: e["examples_per_sec"]["mean"] for e in rank["measured"]} == pytest.approx({
        "ml.c5.xlarge": 40000.0, "ml.c5.2xlarge": 100000.0}, rel=1e-4)


def test_a_knob_pipebench_pinned_itself_is_not_blamed_on_the_best_trial(tmp_path):
    """A search pins inert KMP_* knobs itself; the checklist FAILed 'Can KMP_* matter?' for it."""
    configs = passing_configurations([])
    _change(configs, "t-train-tfr", env_KMP_AFFINITY="disabled", pinned_knobs=["env.KMP_AFFINITY"])
    run = results.load(make_run(tmp_path / "run", rows_of(configs, []), machine()))
    item = _item([run], "openmp_knobs")
    assert item["status"] == "PASS" and item["evidence"]["best_trial_knobs"] == {}


def test_real_data_is_priced_at_its_own_rows_never_the_synthetic_default(tmp_path, cli):
    """A run over data.files was priced at data.synth.rows (always 200,000 after defaults)."""
    run = make_run(tmp_path / "run", passing_rows([]), machine())
    (run / "data.json").write_text(json.dumps(DataFacts(DATA_VERSION, "files", "datatest", 1234, "counted (libsvm lines)",
                                                        ("libsvm",), {"libsvm": 2}, None).to_json()))
    assert epoch_examples_of([results.load(run)]) == 1234
    code, out, _ = cli("checklist", run, "--format", "json")
    assert code == 0 and json.loads(out)["ranking"]["epoch_examples"] == 1234
    (run / "data.json").write_text(json.dumps(DataFacts(DATA_VERSION, "files", "datatest", None, "unknown", ("libsvm",),
                                                        {"libsvm": 2}, None).to_json()))
    code, _, err = cli("checklist", run)
    assert code == 2 and "pass --epoch-examples" in err


# --- decisions downstream use the configurations' rules (issue 14, item 6) ---

def _repeats(name: str, mode: str, pipeline: str, fmt: str, stages: list[dict], means: list[float],
             files: list[str], **kwargs) -> list[dict]:
    """Give one configuration's rows, repeat r measured at about means[r]."""
    return [trial(f"{name}-r{r}", mode, pipeline, fmt, stages, mean, files, repeat=r, configuration_id=name, **kwargs)
            for r, mean in enumerate(means)]


def _load(tmp_path, rows, **facts):
    return [results.load(make_run(tmp_path / "run", rows, machine(**facts)))]


def test_decode_style_is_judged_by_input_mode_cost_never_by_one_lucky_train_trial(tmp_path):
    """Found on real data: one repeat of a scalar-decode train configuration drew high (CV 16%), so the checklist
    FAILed vectorized decode although decoding whole batches was 9× cheaper in input mode. The old rule read
    the fastest single train row — the lucky repeat here — and FAILed."""
    files = data_files(tmp_path / "data")
    rows = (_repeats("scalar-train", "train", "lambdaji-libsvm", "libsvm", SCALAR, [34000, 18000, 19000], files)
            + configuration("vector-train", "train", "aws-sample", "libsvm", VECTORIZED, 25000, files)
            + configuration("vector-input", "input", "aws-sample", "libsvm", VECTORIZED, 180000, files)
            + configuration("scalar-input", "input", "lambdaji-libsvm", "libsvm", SCALAR, 20000, files))
    train = [r for r in rows if r.mode == "train"]
    assert max(train, key=lambda r: r.examples_per_sec_median).configuration_id == "scalar-train"
    item = _item(_load(tmp_path, rows), "vectorized_map")
    assert item["status"] == "PASS", item
    assert item["evidence"]["mode"] == "input" and item["evidence"]["gain"]["mean"] == pytest.approx(9.0, rel=0.01)
    assert item["evidence"]["gain"]["low"] > 1 and item["evidence"]["best_decode_style"] == "vectorized"


def test_a_scalar_best_configuration_is_named_but_decode_cost_decides(tmp_path):
    files = data_files(tmp_path / "data")
    rows = (configuration("scalar-train", "train", "lambdaji-libsvm", "libsvm", SCALAR, 26000, files)
            + configuration("vector-input", "input", "aws-sample", "libsvm", VECTORIZED, 180000, files)
            + configuration("scalar-input", "input", "lambdaji-libsvm", "libsvm", SCALAR, 20000, files))
    item = _item(_load(tmp_path, rows), "vectorized_map")
    assert item["status"] == "PASS" and item["evidence"]["best_decode_style"] == "scalar"
    assert "decodes one example at a time all the same" in item["advice"]


def test_decode_styles_within_noise_are_inconclusive_never_pass_or_fail(tmp_path):
    files = data_files(tmp_path / "data")
    rows = (configuration("vector-input", "input", "aws-sample", "libsvm", VECTORIZED, 100000, files)
            + configuration("scalar-input", "input", "lambdaji-libsvm", "libsvm", SCALAR, 99000, files))
    item = _item(_load(tmp_path, rows), "vectorized_map")
    assert item["status"] == "WARN" and item["evidence"]["comparison"] == "inconclusive", item
    assert item["evidence"]["gain"]["low"] < 1 < item["evidence"]["gain"]["high"]
    assert "add repeats (measurement.repeats)" in item["advice"]


def test_tfrecord_gain_never_compares_two_different_pipelines(tmp_path):
    """Found on real data: a "TFRecord gain" from the best libsvm pipeline (lambdaji, scalar decode) against the
    best TFRecord one (aws-sample, vectorized): stage order, not format. The old rule took the best row of
    each format and PASSed a 2× gain here."""
    files = data_files(tmp_path / "data")
    rows = (configuration("svm", "train", "lambdaji-libsvm", "libsvm", SCALAR, 20000, files)
            + configuration("tfr", "train", "aws-sample", "tfrecord", VECTORIZED, 40000, files))
    item = _item(_load(tmp_path, rows), "tfrecord_gain")
    assert item["status"] == "N/A" and "same pipeline" in item["advice"], item


def test_tfrecord_gain_is_paired_on_the_same_pipeline_batch_and_threads(tmp_path):
    files = data_files(tmp_path / "data")
    rows = (configuration("svm-aws", "train", "aws-sample", "libsvm", VECTORIZED, 20000, files, intra_op_threads=2)
            + configuration("svm-aws-4", "train", "aws-sample", "libsvm", VECTORIZED, 39000, files, intra_op_threads=4)
            + configuration("tfr-aws", "train", "aws-sample", "tfrecord", VECTORIZED, 40000, files, intra_op_threads=2)
            + configuration("svm-lambdaji", "train", "lambdaji-libsvm", "libsvm", SCALAR, 10000, files,
                            intra_op_threads=2))
    item = _item(_load(tmp_path, rows), "tfrecord_gain")
    assert item["status"] == "PASS", item
    assert (item["evidence"]["configuration_id"], item["evidence"]["libsvm_configuration_id"]) == ("tfr-aws", "svm-aws")
    assert item["evidence"]["gain"]["mean"] == pytest.approx(2.0, rel=0.01) and item["evidence"]["gain"]["low"] > 1


def test_a_format_gain_the_interval_cannot_decide_is_inconclusive(tmp_path):
    files = data_files(tmp_path / "data")
    rows = (configuration("svm-a", "train", "aws-sample", "libsvm", VECTORIZED, 39500, files)
            + configuration("tfr-a", "train", "aws-sample", "tfrecord", VECTORIZED, 40000, files))
    item = _item(_load(tmp_path, rows), "tfrecord_gain")
    assert item["status"] == "WARN" and item["evidence"]["comparison"] == "inconclusive", item
    alone = [r for r in rows if r.repeat == 0]  # one shared round: no interval at all
    item = _item(_load(tmp_path / "one", alone), "tfrecord_gain")
    assert item["status"] == "WARN" and item["evidence"]["gain"]["low"] is None and "fewer than two" in item["advice"]


def test_input_bound_reads_the_pooled_interval_of_its_basis_and_an_undecided_one_is_a_warning(tmp_path):
    files = data_files(tmp_path / "data")
    rows = configuration("edge", "train", "aws-sample", "tfrecord", VECTORIZED, 30000, files, waiting=0.05)
    item = _item(_load(tmp_path, rows), "input_bound")
    assert item["status"] == "WARN", item
    assert item["evidence"]["input_bound_basis"] == "slowdown"  # the fixture's step ran on the CPUs
    slowdown = item["evidence"]["input_slowdown_pct"]
    mean, low, high = slowdown["mean"], slowdown["low"], slowdown["high"]
    assert low < 5 < high and slowdown["n"] == 9  # three repeats' rounds, pooled
    assert item["evidence"]["verdict"] == f"inconclusive: slowdown {mean:.1f}% ({low:.1f}–{high:.1f}%)"  # Interval.text
    assert "add repeats" in item["advice"]


@pytest.mark.parametrize(("device", "status", "words"), [
    ("CPU", "FAIL", "For a CPU trainer (its train step ran on the CPUs): input costs 41.2% (40.4–42.0%) of training "
                    "speed here: the pipeline competes with the model for the CPUs; the step itself barely waits"),
    ("GPU", "PASS", "For an accelerator trainer (its train step ran on a GPU): the step waits for input 2.0%"),
])
def test_input_bound_says_what_input_costs_the_trainer_it_assumed(tmp_path, device, status, words):
    """A CPU trainer slowed by a pipeline that takes its cores fails the item though the step barely waits; the
    same windows of a step placed on a GPU (a fake accelerator trial: the worker's fact) pass on the waiting share."""
    files = data_files(tmp_path / "data")
    rows = configuration("shared", "train", "lambdaji-libsvm", "libsvm", SCALAR, 19000, files, waiting=0.02,
                         synthetic=19000 / 0.588, train_device=device)
    item = _item(_load(tmp_path, rows), "input_bound")
    assert item["status"] == status and words in item["advice"], item


def test_input_bound_judges_the_fastest_configuration_not_its_fastest_repeat(tmp_path):
    """The old rule read the fastest single train row: here a lucky repeat of a highly input-bound pipeline."""
    files = data_files(tmp_path / "data")
    rows = (_repeats("lucky", "train", "lambdaji-libsvm", "libsvm", SCALAR, [34000, 18000, 19000], files, waiting=0.5)
            + configuration("steady", "train", "aws-sample", "tfrecord", VECTORIZED, 25000, files, waiting=0.01))
    item = _item(_load(tmp_path, rows), "input_bound")
    assert item["status"] == "PASS" and item["evidence"]["configuration_id"] == "steady", item


def test_cost_rows_built_on_a_busy_machines_throughput_say_so(tmp_path, cli):
    """A throughput measured while other processes used the machine priced an instance type as if quiet."""
    (tmp_path / "catalog.yaml").write_text(CATALOG)
    configs = {n: c | {"busy": True} for n, c in passing_configurations([]).items()}
    rows = [dataclasses.replace(r, instance_type="ml.c5.xlarge") for r in rows_of(configs, [])]
    run = make_run(tmp_path / "run", rows, machine(instance_type="ml.c5.xlarge"))
    rank = to_json(ranking([results.load(run)], load_catalog(tmp_path / "catalog.yaml"), 10**6))
    (entry,) = rank["measured"]
    assert entry["busy_machine"] is True and "busy machine" in entry["note"]
    assert all(e["busy_machine"] and "busy machine" in e["assumption"] for e in rank["projected"])
    code, out, _ = cli("checklist", run, "--catalog", tmp_path / "catalog.yaml")
    assert code == 0 and "**Busy machine:** the throughput of ml.c5.xlarge was measured while" in out
    assert "| ml.c5.xlarge | " in out and "| busy machine |" in out
