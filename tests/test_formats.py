"""The files pipebench writes: one version key spelt one way, read in the old spellings of real older files.

tests/golden/formats-before-2026-11-26 holds files pipebench wrote before the version key had one spelling:
a run folder (machine.json `facts_version`, data.json without a version, capacity.json `profile_version`,
sharding.json `sharding_version`), converter manifests (`manifest_version`) and a Criteo feature map
(`feature_map_version`). A reader that knew only today's spelling would refuse every one of them.
"""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from pipebench.converters.criteo import FeatureMap
from pipebench.converters.manifest import MANIFEST_VERSION, read_manifest
from pipebench import results
from pipebench.data_files import format_of
from pipebench.errors import DataError, ResultsVersionError
from pipebench.measure.intervals import Interval
from pipebench.sharding.record import (
    Ready,
    ShardingJob,
    WorkerEpoch,
    WorkerError,
    read_sharding,
    reply,
)
from pipebench.synth_facts import SynthFacts
from pipebench.typed import from_json, to_json
from pipebench.versioned import VERSION_KEY, WAS, check_version

OLD = Path(__file__).parent / "golden" / "formats-before-2026-11-26"
RUN_JSON = ("machine.json", "data.json", "capacity.json", "sharding.json")


def test_every_version_key_is_spelt_one_way_and_old_spellings_are_named_once():
    assert VERSION_KEY == "schema_version"
    spellings = [old for olds in WAS.values() for old in olds]
    assert len(spellings) == len(set(spellings)) and VERSION_KEY not in spellings


def test_a_run_folder_written_before_today_reads_as_it_is(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(OLD / "run", run)
    for name, key in (("machine.json", "facts_version"), ("capacity.json", "profile_version"),
                      ("sharding.json", "sharding_version")):
        assert key in json.loads((run / name).read_text()), f"the golden {name} is no longer in the old spelling"
    loaded = results.load(run)
    assert loaded.machine.schema_version == 2 and loaded.data.schema_version == 1 and loaded.data.rows == 20000
    assert loaded.capacity.schema_version == 2 and loaded.capacity.profiles[0].configuration_id == "cfg-a"
    assert read_sharding(run).schema_version == 1 and read_sharding(run).notes == ()


def test_upgrade_rewrites_the_old_spellings_with_the_one_key(tmp_path, cli):
    run = tmp_path / "run"
    shutil.copytree(OLD / "run", run)
    before = {name: json.loads((run / name).read_text()) for name in RUN_JSON}
    code, out, _ = cli("upgrade", run)
    assert code == 0, out
    assert "machine.json (facts_version → schema_version)" in out and "data.json (schema_version 1 added)" in out
    assert "capacity.json (profile_version → schema_version)" in out and "sharding.json (sharding_version" in out
    for name in RUN_JSON:
        after = json.loads((run / name).read_text())
        assert next(iter(after)) == VERSION_KEY and not set(after) & set(WAS.get(name, ())), name
        old = {k: v for k, v in before[name].items() if k not in WAS.get(name, ())}
        assert {k: v for k, v in after.items() if k != VERSION_KEY} == old, f"{name}: more than its key changed"
    assert results.load(run).machine == results.load(OLD / "run").machine
    code, out, _ = cli("upgrade", run)
    assert code == 0 and out.strip().endswith("already current")


@pytest.mark.parametrize("name, fmt", [("manifest-packed.json", "packed"), ("manifest-criteo.json", "tfrecord"),
                                       ("manifest-quarantine.json", "tfrecord")])
def test_converter_manifests_of_the_old_spelling_are_read_typed(name, fmt):
    manifest = read_manifest(OLD / name)
    assert manifest.schema_version == MANIFEST_VERSION and manifest.format == fmt
    assert manifest.rows == sum(s.rows for s in manifest.shards) > 0
    assert (manifest.packed_layout is not None) == (fmt == "packed")
    if manifest.packed_layout is not None:
        assert manifest.packed_layout.rows_per_record == 16 and manifest.packed_layout.columns[1].name == "ids"
    assert (manifest.feature_map is not None) == (name == "manifest-criteo.json")
    assert (manifest.quarantine_file is not None) == (name == "manifest-quarantine.json")


def test_a_manifest_of_a_newer_or_unknown_version_is_refused_in_one_line(tmp_path):
    found = json.loads((OLD / "manifest-packed.json").read_text())
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({**found, "manifest_version": 2}))
    with pytest.raises(ResultsVersionError, match=r"^\S+manifest\.json: manifest_version 2 was written by a newer "
                                                  r"pipebench \(this one reads 1\): update pipebench$"):
        read_manifest(path)
    path.write_text(json.dumps({k: v for k, v in found.items() if k != "manifest_version"}))
    with pytest.raises(DataError, match=r"manifest\.json: not a converter manifest \(no schema_version\)$"):
        read_manifest(path)
    path.write_text(json.dumps({**found, "more": 1}))
    with pytest.raises(DataError, match=r"manifest\.json: more: unknown key"):
        read_manifest(path)


def test_the_manifest_tells_a_files_format(tmp_path):
    (tmp_path / "part-00000-of-00002.packed.tfrecord").write_bytes(b"")
    shutil.copy(OLD / "manifest-packed.json", tmp_path / "manifest.json")
    assert format_of(str(tmp_path / "part-00000-of-00002.packed.tfrecord")) == "packed"


def test_a_feature_map_of_the_old_spelling_loads():
    fmap = FeatureMap.load(OLD / "feature_map.json")
    assert fmap.feature_size == json.loads((OLD / "feature_map.json").read_text())["feature_size"]


def test_a_job_record_and_a_launch_manifest_of_the_old_spelling_are_read_typed(tmp_path):
    """job.json said `job_version` and the launch manifest `launch_version` until 2026-11-27; a collected folder's
    jobs.json lists job records, so an old one lists that spelling too."""
    from pipebench.results.job import read_job, read_jobs
    from pipebench.sagemaker.launch import read_manifest

    job = read_job(OLD / "job.json", "job.json")
    assert job.schema_version == 1 and job.run_dir == "tiny/20261126-101010-abcd"
    manifest = read_manifest((OLD / "pipebench-launch.json").read_bytes(), "pipebench-launch.json")
    assert manifest.schema_version == 1 and manifest.jobs[0].instance_type == "ml.c5.xlarge"
    member = tmp_path / "member"
    shutil.copytree(OLD / "run", member)
    shutil.copy(OLD / "job.json", member / "job.json")
    from pipebench.results.upgrade import upgrade_run_folder
    assert "job.json (job_version → schema_version)" in upgrade_run_folder(member)
    assert read_job(member / "job.json", "job.json") == job
    assert next(iter(json.loads((member / "job.json").read_text()))) == "schema_version"
    listed = tmp_path / "jobs.json"
    listed.write_text(json.dumps([json.loads((OLD / "job.json").read_text()), to_json(job)]))
    assert read_jobs(listed) == (job, job)
    listed.write_text(json.dumps([{**to_json(job), "run_dir": "../../elsewhere"}]))
    with pytest.raises(DataError, match=rf"^{listed}: \[0\]: run_dir '\.\./\.\./elsewhere': not a folder inside"):
        read_jobs(listed)


def test_check_version_names_the_key_as_the_file_spells_it():
    assert list(check_version({"a": 1, "facts_version": 2}, "f", VERSION_KEY, 2, "x", "y", ("facts_version",))) \
        == [VERSION_KEY, "a"]
    with pytest.raises(ResultsVersionError, match=r"^f: facts_version 1 is older than the 2 this pipebench reads: y$"):
        check_version({"facts_version": 1}, "f", VERSION_KEY, 2, "x", "y", ("facts_version",))
    with pytest.raises(ResultsVersionError, match=r"^f: layout 1 \(no schema_version\) is older than the 2 "):
        check_version({}, "f", VERSION_KEY, 2, "x", "y", absent=1)
    assert check_version({}, "f", VERSION_KEY, 1, "x", "y", absent=1) == {VERSION_KEY: 1}


def test_a_synth_json_written_before_it_had_a_version_reads_as_layout_1(tmp_path):
    found = SynthFacts.load(OLD / "synth.json", "make it again")
    assert "schema_version" not in json.loads((OLD / "synth.json").read_text())
    assert found.schema_version == 1 and found.rows == sum(f.rows for f in found.files) == 20000
    assert 0.5 < found.oracle_auc < 1 and len(found.categorical_id_ranges) == 26
    path = tmp_path / "synth.json"
    path.write_text(json.dumps({"schema_version": 2, **json.loads((OLD / "synth.json").read_text())}))
    with pytest.raises(ResultsVersionError, match=r"synth\.json: schema_version 2 was written by a newer pipebench"):
        SynthFacts.load(path, "make it again")


def test_an_interval_has_one_json_shape_and_reads_back():
    bounded, open_above, undecided = Interval(2.0, 1.5, 2.5, 3), Interval(2.0, 1.5, math.inf, 3), Interval(2.0, None,
                                                                                                          None, 1)
    written = to_json({"a": bounded, "b": [open_above], "c": undecided})
    assert written == {"a": {"mean": 2.0, "low": 1.5, "high": 2.5, "n": 3},
                       "b": [{"mean": 2.0, "low": 1.5, "high": None, "n": 3}],
                       "c": {"mean": 2.0, "low": None, "high": None, "n": 1}}
    json.dumps(written, allow_nan=False)
    assert [from_json(Interval, found, "f") for found in (written["a"], written["b"][0], written["c"])] == \
        [bounded, open_above, undecided]
    with pytest.raises(DataError, match=r"^f: rounds: unknown key"):
        from_json(Interval, {"mean": 2.0, "low": None, "high": None, "rounds": 1}, "f")


def test_the_sharding_protocol_replies_are_typed():
    measured = {"placement": "file", "round": 0, "worker": 1, "examples": 10, "batches": 1, "seconds": 0.5,
                "rchar_bytes": 100, "read_bytes": 0}
    assert reply(json.dumps(measured).encode(), "w") == WorkerEpoch("file", 0, 1, 10, 1, 0.5, 100, 0)
    assert reply(b'{"ready": "data"}', "w") == Ready("data")
    assert reply(b'{"error": "ValueError: no"}', "w") == WorkerError("ValueError: no")
    with pytest.raises(DataError, match=r"^w: readiness: unknown key"):
        reply(b'{"readiness": "data"}', "w")
    job = {"parent_pid": 1, "workers": 2, "pipeline": {}, "sources": {}, "threads": {"intra": None, "inter": 2},
           "order": [[0, "file"], [0, "data"]]}
    assert from_json(ShardingJob, job, "job").order == ((0, "file"), (0, "data"))
    with pytest.raises(DataError, match=r"^job: order\[1\]: must be a list of 2, not list \[0\]$"):
        from_json(ShardingJob, {**job, "order": [[0, "file"], [0]]}, "job")
