"""Bad-input corpus for `pipebench sharding RUN_DIR` and the checklist reading its sharding.json: one error line
naming the run folder (and the configuration) and the reason; the run folder left as it was.

Run folders are hand-made (tests/report_fixtures.py, four data files). Every case but the last is refused before
any worker starts (no TensorFlow); the last starts a 2-worker cluster on data files that are not TFRecords.
"""
from __future__ import annotations

import json

import pytest

from badinput import Bad, cases
from report_fixtures import passing_run, run_holding
from sharding_fixtures import sharding_record

RUN = "{tmp}/run"


def _with_sharding(text: str):
    return run_holding("sharding.json", text)


def _placed(placement: str) -> dict:
    """Give a sharding record as `pipebench sharding` writes it, its first measurement under `placement`."""
    found = sharding_record(["a"], 10, {"file": 1.0})
    return {**found, "measurements": [{**found["measurements"][0], "placement": placement}]}


CASES = [
    Bad("no-run-folder", ("sharding", "{tmp}/nothing"), r"^{tmp}/nothing: no such run folder$", code=2),
    Bad("one-worker", ("sharding", RUN, "--workers", "1"),
        r"^{tmp}/run: configuration t-train-tfr: sharding needs at least 2 workers, not 1$", make=passing_run, code=2,
        out="run/sharding.json"),
    Bad("fewer-files-than-workers", ("sharding", RUN, "--workers", "5"),
        r"^{tmp}/run: configuration t-train-tfr: FILE sharding needs at least as many files as workers \(4 file\(s\) "
        r"for 5 workers\): split the data \(pipebench convert --shards 5\) or leave it out \(--placements data off "
        r"shard-after-read\)$", make=passing_run, code=2, out="run/sharding.json"),
    Bad("unknown-configuration", ("sharding", RUN, "--configuration", "nope"),
        r"^{tmp}/run: no measured configuration 'nope' \(known: ", make=passing_run, code=2, out="run/sharding.json"),
    Bad("unknown-placement", ("sharding", RUN, "--placements", "auto"),
        r"^sharding: argument --placements: invalid choice: 'auto'", make=passing_run, code=2, out="run/sharding.json"),
    Bad("checklist-sharding-json-not-json", ("checklist", RUN), r"^{tmp}/run/sharding.json:1: not valid JSON: ",
        make=_with_sharding("{measurements"), code=1, process=True),
    Bad("checklist-sharding-json-other-version", ("checklist", RUN),
        r"^{tmp}/run/sharding.json: sharding_version 9 was written by a newer pipebench \(this one reads 1\): "
        r"update pipebench$", make=_with_sharding(json.dumps({"sharding_version": 9})), code=1),
    Bad("checklist-sharding-json-older-version", ("checklist", RUN),
        r"^{tmp}/run/sharding.json: sharding_version 0 is older than the 1 this pipebench reads: run `pipebench "
        r"sharding {tmp}/run` again$", make=_with_sharding(json.dumps({"sharding_version": 0})), code=1),
    Bad("checklist-sharding-json-no-version", ("checklist", RUN),
        r"^{tmp}/run/sharding.json: not a sharding record \(a JSON list, not an object\)$",
        make=_with_sharding("[]"), code=1),
    Bad("checklist-sharding-json-bad-measurement", ("checklist", RUN),
        r"^{tmp}/run/sharding.json: measurements\[0\]\.round: missing$",
        make=_with_sharding(json.dumps({**sharding_record(["a"], 10, {"file": 1.0}),
                                        "measurements": [{"placement": "file"}]})), code=1),
    Bad("checklist-sharding-json-unknown-placement", ("checklist", RUN),
        r"^{tmp}/run/sharding.json: measurements\[0\]\.placement: unknown placement 'auto' \(known: file, ",
        make=_with_sharding(json.dumps(_placed("auto"))), code=1),
]

#: Starts a 2-worker cluster (TensorFlow): the data files of the hand-made run are not TFRecords.
WORKER_CASES = [
    Bad("data-not-readable", ("sharding", RUN, "--rounds", "1", "--placements", "data"),
        r"^sharding cluster: worker \d: DataLossError: ", make=passing_run, code=1,
        out="run/sharding.json", tf=True),
]


@pytest.mark.parametrize("case", cases(CASES + WORKER_CASES))
def test_refused(case, tmp_path, run_case):
    run_case(case, tmp_path)
