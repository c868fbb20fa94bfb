"""Sharding without TensorFlow: each placement's pipeline, the refusals, the round order, sharding.json's figures,
and the checklist's advice from recorded results (tests/sharding_fixtures.py)."""
from __future__ import annotations

import pytest
from report_fixtures import data_files, machine, make_run, passing_rows, passing_run
from sharding_fixtures import EXAMPLES, sharding_record, typed, write_record

import pipebench.results as results
from pipebench.errors import UsageError
from pipebench.pipeline.presets import preset
from pipebench.report.checklist import input_sharding
from pipebench.sharding.cluster import measuring_order, worker_cpus
from pipebench.sharding.placements import (
    PLACEMENTS,
    check_request,
    measured_spec,
    order_notes,
    placement_spec,
)
from pipebench.sharding.record import figures, lines, paired
from pipebench.sources.service_cluster import free_ports
from pipebench.typed import to_json


def test_shard_after_read_shards_right_after_the_reader_and_the_policies_leave_the_pipeline_alone():
    aws, _ = measured_spec(preset("aws-sample", files=("d/*",), num_shards=4, shard_index=1, epochs=None))
    assert aws.kinds == ("batch", "decode", "prefetch")  # its own shard and the repeat dropped
    assert placement_spec(aws, "shard-after-read", 2, 1).stages[0].params == (("num_shards", 2), ("index", 1))
    guide, changes = measured_spec(preset("guide", files=("d/*",)).with_source(mode="fastfile"))
    assert changes == ["fastfile mode read as file mode", "repeat dropped", "cache dropped"]
    assert placement_spec(guide, "shard-after-read", 2, 0).kinds[:2] == ("interleave", "shard")  # after it reads
    for name in ("file", "data", "off"):
        assert placement_spec(guide, name, 2, 0) == guide


def test_requests_that_cannot_be_measured_are_refused_in_one_line():
    with pytest.raises(UsageError, match=r"^R: FILE sharding needs at least as many files as workers \(1 file\(s\) "
                                         r"for 2 workers\)"):
        check_request("R", ["a"], 2, list(PLACEMENTS))
    check_request("R", ["a"], 2, ["data", "off", "shard-after-read"])  # without FILE one file will do
    with pytest.raises(UsageError, match="^R: sharding needs at least 2 workers, not 1$"):
        check_request("R", ["a", "b"], 1, ["data"])
    with pytest.raises(UsageError, match="^R: the pipeline's files match nothing on this machine$"):
        check_request("R", [], 2, ["data"])


def test_every_round_measures_every_placement_once_in_a_seeded_order():
    order = measuring_order(list(PLACEMENTS), 3, "cfg/2")
    assert order == measuring_order(list(PLACEMENTS), 3, "cfg/2")
    for r in range(3):
        assert sorted(p for i, p in order if i == r) == sorted(PLACEMENTS)
    assert measuring_order(list(PLACEMENTS), 3, "other") != order  # the seed is the configuration's


def test_workers_get_cpus_of_their_own_only_when_there_are_enough():
    assert worker_cpus(2, (0, 1, 2, 3, 4)) == [(0, 1), (2, 3)]
    assert worker_cpus(3, (0, 1)) is None
    ports = free_ports(3)
    assert len(set(ports)) == 3


def test_figures_are_per_worker_means_with_intervals_over_rounds():
    record = sharding_record(["a", "b"], 4000, {"file": 20000, "data": 10000, "off": 9000})
    found = {f.placement: f for f in figures(typed(record))}
    assert found["file"].examples_per_sec.mean == pytest.approx(20000, rel=0.01) and found["file"].examples_per_sec.n == 3
    assert found["file"].bytes_share.mean == pytest.approx(0.5) and found["data"].bytes_share.mean == pytest.approx(1.0)
    assert found["off"].examples_per_worker == (2 * EXAMPLES, 2 * EXAMPLES)
    assert paired(found["file"], found["data"]).mean == pytest.approx(2.0, rel=0.03)
    text = "\n".join(lines(typed(record)))
    assert "file             (FILE): 19,997 (19,028–21,016) examples/s per worker; read 50% (50–50%) of the bytes" in text


def _checklist(tmp_path, files: int, rates: dict[str, float]) -> dict:
    paths = data_files(tmp_path / "data")
    run = make_run(tmp_path / "run", passing_rows(paths), machine())
    write_record(run, sharding_record(paths[:files], 1000 * files, rates))
    return to_json(input_sharding([results.load(run)]))


def test_checklist_recommends_file_and_explains_sharded_by_s3_key(tmp_path):
    item = _checklist(tmp_path, 4, {"file": 20000, "data": 11000, "shard-after-read": 12000})
    assert item["status"] == "PASS" and item["evidence"]["compared_with"] == "shard-after-read"
    assert item["advice"].startswith("Shard by file (FILE / shard-after-read per-worker throughput 1.67")
    assert "ShardedByS3Key gives each instance only its own S3 objects" in item["advice"]
    assert "set the policy OFF" in item["advice"]


def test_checklist_says_inconclusive_when_the_interval_holds_one(tmp_path):
    item = _checklist(tmp_path, 4, {"file": 12000, "data": 12000 * 1.0001})
    assert item["status"] == "WARN" and item["evidence"]["comparison"] == "inconclusive"
    assert item["advice"].startswith("Inconclusive on speed (FILE / data per-worker throughput")
    assert "FILE workers read 50% (50–50%) of the bytes each (measured as /proc/<pid>/io rchar), data 100%" in item["advice"]
    assert "FILE still read fewer bytes per worker than data" in item["advice"] and "1/2" not in item["advice"]


def test_checklist_takes_what_file_read_from_the_record_not_from_1_over_n(tmp_path):
    paths = data_files(tmp_path / "data")
    run = make_run(tmp_path / "run", passing_rows(paths), machine())
    record = sharding_record(paths, 4000, {"file": 12000, "data": 12000 * 1.0001})
    for m in record["measurements"]:  # uneven files: FILE's workers read as much as DATA's
        m["rchar_bytes"] = 4000
    write_record(run, record)
    item = to_json(input_sharding([results.load(run)]))
    assert "FILE workers read 100% (100–100%) of the bytes each" in item["advice"]
    assert "Nor did FILE measurably read fewer bytes per worker than data" in item["advice"]


def test_checklist_warns_when_file_is_slower_or_not_measured(tmp_path):
    slower = _checklist(tmp_path / "a", 4, {"file": 8000, "data": 12000})
    assert slower["status"] == "WARN" and slower["evidence"]["comparison"] == "slower"
    unmeasured = _checklist(tmp_path / "b", 4, {"data": 12000})
    assert unmeasured["status"] == "WARN" and unmeasured["advice"].startswith(
        "FILE was not measured: each worker read 100% (100–100%) of the bytes under data (measured as /proc/<pid>/io "
        "rchar). Split the data")
    too_few = _checklist(tmp_path / "c", 1, {"data": 12000})
    assert too_few["status"] == "FAIL" and too_few["advice"].startswith("FILE sharding cannot work on 1 file(s) for 2")


def test_checklist_without_a_sharding_record_says_how_to_make_one(tmp_path):
    run = passing_run(tmp_path)
    item = to_json(input_sharding([results.load(run)]))
    assert item["status"] == "N/A" and "pipebench sharding RUN_DIR" in item["advice"]


def test_data_with_an_unseeded_shuffle_is_noted_and_a_seeded_one_is_not():
    lambdaji, _ = measured_spec(preset("lambdaji-libsvm", files=("d/*",)))
    (note,) = order_notes(lambdaji, ["file", "data"])
    assert note.startswith("DATA with an unseeded shuffle")
    assert order_notes(lambdaji, ["file", "shard-after-read"]) == []
    assert order_notes(measured_spec(preset("lambdaji-libsvm", files=("d/*",), seed=3))[0], ["data"]) == []
