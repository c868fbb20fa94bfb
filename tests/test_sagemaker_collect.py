"""`sagemaker collect` on hand-made output archives in moto: several jobs and hosts merged, ids kept consistent.

The archives' refusals (hostile paths, broken job.json, damaged run folders) are bad-input cases in
test_bad_sagemaker.py; the end-to-end path, from a real entry point's output, is in test_sagemaker_moto.py.
"""
from __future__ import annotations

import json

from collect_fixtures import LAUNCH_URI, archive, host, launch_jobs, upload_archive

import pipebench.results as results
from pipebench.results.schema import SAMPLE_SCHEMA, TRIAL_SCHEMA
from pipebench.results.store import read_table
from pipebench.sagemaker.collect import collect


def test_hosts_of_several_jobs_merge_with_trial_ids_and_remeasure_of_prefixed_alike(tmp_path, aws):
    file_job, fastfile_job = launch_jobs(("File", "FastFile"))
    for job, hosts in ((file_job, ("algo-1", "algo-2")), (fastfile_job, ("algo-1",))):
        root = tmp_path / job["name"]
        for name in hosts:
            host(name)(root, tmp_path, job)
        upload_archive(job, archive(root))

    logged = []
    collect(LAUNCH_URI, tmp_path / "merged", log=logged.append)

    merged = tmp_path / "merged"
    trials = read_table(merged / "trials.parquet", TRIAL_SCHEMA).to_pylist()
    labels = ["ml.c5.xlarge/File/algo-1", "ml.c5.xlarge/File/algo-2", "ml.c5.xlarge/FastFile/algo-1"]
    assert sorted(r["trial_id"] for r in trials) == sorted(f"{label}/{t}" for label in labels for t in ("t1", "t1-again"))
    # a re-measure names the trial it measures again by that trial's (prefixed) id
    assert sorted(r["remeasure_of"] for r in trials if r["remeasure_of"]) == sorted(f"{label}/t1" for label in labels)
    assert {(r["instance_type"], r["source_mode"]) for r in trials} == {("ml.c5.xlarge", "file"),
                                                                         ("ml.c5.xlarge", "fastfile")}
    samples = read_table(merged / "samples.parquet", SAMPLE_SCHEMA).to_pylist()
    assert {s["trial_id"] for s in samples} == {r["trial_id"] for r in trials}
    listed = json.loads((merged / "jobs.json").read_text())
    assert sorted(j["run_dir"] for j in listed) == sorted(labels)
    assert {j["schema_version"] for j in listed} == {1}
    runs = results.load_many([merged], allow_mixed=True)
    assert sorted(str(r.run_dir.relative_to(merged)) for r in runs) == sorted(labels)
    assert not (merged / ".unpack").exists() and not (merged / "algo-1").exists()
    assert len(logged) == 3 and logged[0].endswith("on algo-1, 2 trial(s)")
