"""Bad-input corpus for `pipebench capacity RUN_DIR`: one error line naming the run folder (and the configuration)
and the reason; the run folder left as it was, no capacity.json written.

Run folders are hand-made (tests/report_fixtures.py). Every case but the last is refused before any worker
starts (no TensorFlow); the last runs workers on data files that are not TFRecords.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from badinput import Bad, cases
from report_fixtures import configuration, data_files, machine, make_run, passing_rows, passing_run, run_holding

RUN = "{tmp}/run"


def _with_capacity(text: str):
    return run_holding("capacity.json", text)


def _with_synthetic(folder: Path) -> None:
    files = data_files(folder / "data")
    make_run(folder / "run", passing_rows(files) + configuration("t-synthetic", "synthetic", "synthetic", "tfrecord", [],
                                                                 90000, files), machine())


CASES = [
    Bad("no-run-folder", ("capacity", "{tmp}/nothing"), r"^{tmp}/nothing: no such run folder$", code=2),
    Bad("unknown-configuration", ("capacity", RUN, "--configuration", "nope"),
        r"^{tmp}/run: no measured configuration 'nope' \(known: t-input-svm, t-input-tfr, t-input-tfr-svm, t-train-big, "
        r"t-train-svm, t-train-tfr, t-train-tfr-svm\)$", make=passing_run, code=2, out="run/capacity.json"),
    Bad("more-cores-than-cpus", ("capacity", RUN, "--cores", "1", "999"),
        r"^999 cores asked, but this process may use \d+ CPU\(s\) \([\d,]+\)$", make=passing_run, code=2,
        out="run/capacity.json"),
    Bad("synthetic-configuration", ("capacity", RUN, "--configuration", "t-synthetic"),
        r"^{tmp}/run: configuration t-synthetic is a synthetic trial .*no pipeline to profile$", make=_with_synthetic,
        code=2, out="run/capacity.json"),
    Bad("capacity-json-not-json", ("capacity", RUN), r"^{tmp}/run/capacity.json:1: not valid JSON: ",
        make=_with_capacity("{profiles"), code=1, process=True),
    Bad("capacity-json-other-version", ("capacity", RUN),
        r"^{tmp}/run/capacity.json: schema_version 9 was written by a newer pipebench \(this one reads 2\): "
        r"update pipebench$",
        make=_with_capacity(json.dumps({"schema_version": 9, "profiles": []})), code=1),
    Bad("capacity-json-older-version", ("capacity", RUN),
        r"^{tmp}/run/capacity.json: profile_version 1 is older than the 2 this pipebench reads: run `pipebench "
        r"capacity {tmp}/run` again$",
        make=_with_capacity(json.dumps({"profile_version": 1, "profiles": []})), code=1),
    Bad("capacity-json-no-version", ("capacity", RUN),
        r"^{tmp}/run/capacity.json: not a capacity profile \(no schema_version\)$",
        make=_with_capacity(json.dumps({"profiles": []})), code=1),
    Bad("capacity-json-version-not-a-number", ("capacity", RUN),
        r"^{tmp}/run/capacity.json: not a capacity profile \(profile_version '2' is not a whole number\)$",
        make=_with_capacity(json.dumps({"profile_version": "2", "profiles": []})), code=1),
    Bad("rounds-zero", ("capacity", RUN, "--rounds", "0"), r"^capacity: argument --rounds: must be from 1 to 100, not 0",
        make=passing_run, code=2, out="run/capacity.json"),
]

#: Runs workers (TensorFlow): the data files of the hand-made run are not TFRecords.
WORKER_CASES = [
    Bad("data-not-readable", ("capacity", RUN, "--cores", "1", "--rounds", "1"),
        r"^{tmp}/run: configuration t-train-tfr: prefix 'source[^']*' on CPU \d: failed: DataLossError: ",
        make=passing_run, code=1, out="run/capacity.json", tf=True),
]


@pytest.mark.parametrize("case", cases(CASES + WORKER_CASES))
def test_refused(case, tmp_path, run_case):
    run_case(case, tmp_path)
