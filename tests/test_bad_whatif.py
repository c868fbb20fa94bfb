"""Bad-input corpus for `pipebench whatif`: no capacity.json, a damaged or newer one, bad types and rates.

Each case is one error line and leaves its folder as it was (tests/badinput.py); run folders and
capacity.json are hand-made (tests/report_fixtures.py, tests/capacity_fixtures.py), no TensorFlow.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from badinput import Bad, cases
from capacity_fixtures import profile, write_capacity
from report_fixtures import machine, make_run, passing_rows

RUN = "{tmp}/run"
STAGES = [("source", 1e-6, True), ("decode", 15e-6, False)]


def _run(folder: Path, capacity: bool = True) -> Path:
    run_dir = make_run(folder / "run", passing_rows([]), machine(instance_type="ml.c5.xlarge"))
    return write_capacity(run_dir, profile(STAGES)) if capacity else run_dir


def _capacity(change: Callable[[dict], object]) -> Callable[[Path], None]:
    """Give a make() writing a profiled run folder whose capacity.json is then changed by `change(doc)`."""
    def make(folder: Path) -> None:
        path = _run(folder) / "capacity.json"
        doc = json.loads(path.read_text())
        found = change(doc)
        path.write_text(found if isinstance(found, str) else json.dumps(doc))
    return make


CASES = [
    Bad("whatif-no-capacity-json", ("whatif", RUN), r"^{tmp}/run/capacity\.json: missing: run `pipebench capacity "
        r"{tmp}/run` first$", make=lambda f: _run(f, capacity=False), code=2, process=True),
    Bad("whatif-not-a-run-folder", ("whatif", "{tmp}/nowhere"), r"^{tmp}/nowhere: no such run folder$", code=2),
    Bad("whatif-capacity-not-json", ("whatif", RUN), r"^{tmp}/run/capacity\.json:1: not valid JSON",
        make=_capacity(lambda doc: "{profiles"), code=1),
    Bad("whatif-capacity-missing-key", ("whatif", RUN),
        r"^{tmp}/run/capacity\.json: profiles\[0\]\.stages\[1\]\.cpu_sec_per_example: missing$",
        make=_capacity(lambda doc: doc["profiles"][0]["stages"][1].pop("cpu_sec_per_example")), code=1),
    Bad("whatif-capacity-newer", ("whatif", RUN), r"^{tmp}/run/capacity\.json: schema_version 3 was written by a "
        r"newer pipebench \(this one reads 2\): update pipebench$",
        make=_capacity(lambda doc: doc.update(schema_version=3, more=1)), code=1),
    Bad("whatif-unknown-instance-type", ("whatif", RUN, "--instance-type", "ml.z9.large"),
        r"^--instance-type: ml\.z9\.large is not in the catalog \(it has ml\.c5\.xlarge", make=_run, code=2),
    Bad("whatif-rate-unknown-type", ("whatif", RUN, "--accelerator-rate", "ml.p9.2xlarge=2e6"),
        r"^--accelerator-rate ml\.p9\.2xlarge=2e6: ml\.p9\.2xlarge is not in the catalog", make=_run, code=2),
    Bad("whatif-rate-not-a-number", ("whatif", RUN, "--accelerator-rate", "ml.p3.2xlarge=lots"),
        r"^--accelerator-rate ml\.p3\.2xlarge=lots: the rate 'lots' is not a number$", make=_run, code=2),
    Bad("whatif-rate-nan", ("whatif", RUN, "--accelerator-rate", "ml.p3.2xlarge=nan"),
        r"^--accelerator-rate ml\.p3\.2xlarge=nan: the rate must be a finite number", make=_run, code=2),
    Bad("whatif-rate-no-type", ("whatif", RUN, "--accelerator-rate", "2.1e6"),
        r"^--accelerator-rate 2\.1e6: expected TYPE=EXAMPLES_PER_SEC", make=_run, code=2),
    Bad("whatif-feed-negative", ("whatif", RUN, "--feed=-5"),
        r"^whatif: argument --feed: must be above 0 and at most 1,000,000,000,000, not -5", make=_run, code=2),
    Bad("whatif-train-cores-inf", ("whatif", RUN, "--train-cores", "inf"),
        r"^whatif: argument --train-cores: must be from 0 to 4,096, not inf", make=_run, code=2),
]


@pytest.mark.parametrize("case", cases(CASES))
def test_refused(case, tmp_path, run_case):
    run_case(case, tmp_path)
