"""Bad-input corpus for source mode `service`: settings the tf.data service cannot run are refused in one line
before anything starts (at load time, or at planning for what depends on the pipeline and its files).

The planning cases read `data.files` the case makes (two libsvm files), so nothing is synthesized and the
harness can check the folder is unchanged.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from badinput import Bad, cases

EXPERIMENT = """\
name: tiny
results: out
data:
  files: {libsvm: [d/*.libsvm]}
pipelines:
  presets: [PRESET]
  formats: [libsvm]
  source_modes: [file, service]
modes: [input]
"""


def _experiment(service: str, extra: str = "", preset: str = "aws-sample") -> callable:
    def make(folder: Path) -> None:
        (folder / "d").mkdir()
        for i in range(2):
            (folder / "d" / f"part-{i}.libsvm").write_text("".join(f"1 {j}:1 {j + 1}:0.5\n" for j in range(3)))
        (folder / "exp.yaml").write_text(EXPERIMENT.replace("PRESET", preset) + f"sources:\n  service: {{{service}}}\n" + extra)
    return make


def _run() -> tuple[str, ...]:
    return ("run", "exp.yaml")


CASES = [
    # --- at load time: the settings alone cannot work ---
    Bad("file-without-worker-addresses", _run(), r"^exp\.yaml: sources\.service\.fixed_worker_list: false, but "
        r"sharding_policy FILE needs the dispatcher to know the workers' addresses",
        _experiment("sharding_policy: FILE, fixed_worker_list: false"), out="out", code=1, process=True),
    Bad("data-without-worker-addresses", _run(), r"^exp\.yaml: sources\.service\.fixed_worker_list: false, but "
        r"sharding_policy DATA needs", _experiment("sharding_policy: DATA, fixed_worker_list: false"),
        out="out", code=1),
    Bad("pipe-op-on-a-remote-worker", _run(), r"^exp\.yaml: sources\.service\.read: pipe: SageMaker's "
        r"PipeModeDataset is a custom op", _experiment("read: pipe"), out="out", code=1),
    Bad("py-function-cold-reads", _run(), r"^exp\.yaml: sources\.file\.cold: true evicts each file as it opens, "
        r"which runs a Python function \(numpy_function\) in the split part",
        _experiment("read: file", "  file: {cold: true}\n"), out="out", code=1),
    Bad("py-function-fastfile-emulation", _run(), r"^exp\.yaml: sources\.fastfile\.emulate: true waits per file "
        r"opened, which runs a Python function", _experiment("read: fastfile"), out="out", code=1),
    Bad("unknown-policy", _run(), r"^exp\.yaml: sources\.service\.sharding_policy: must be one of OFF, DYNAMIC, "
        r"FILE, DATA, FILE_OR_DATA, not 'HINT'$", _experiment("sharding_policy: HINT"), out="out", code=1),
    Bad("no-workers", _run(), r"^exp\.yaml: sources\.service\.workers: must be in \[1, 64\], not 0$",
        _experiment("workers: 0"), out="out", code=1),
    Bad("split-before-no-stage-kind", _run(), r"^exp\.yaml: sources\.service\.split_before: must be one of "
        r"interleave, .*, not 'map'$", _experiment("split_before: map"), out="out", code=1),
    Bad("unknown-compression", _run(), r"^exp\.yaml: sources\.service\.compression: must be one of AUTO, none, "
        r"not 'SNAPPY'$", _experiment("compression: SNAPPY"), out="out", code=1),
    # --- at planning: the pipeline or its files cannot be split or sharded so ---
    Bad("split-before-a-missing-stage", _run(), r"^sources\.service\.split_before: shuffle, but the pipeline "
        r"\(batch > decode > repeat > prefetch\) has no shuffle stage to split before \(pipeline aws-sample, libsvm\)$",
        _experiment("split_before: shuffle"), out="out", code=1, tf=True),
    Bad("file-with-fewer-files-than-workers", _run(), r"^sources\.service\.sharding_policy: FILE gives each worker "
        r"its own files, but there are 2 file\(s\) for 3 workers; use FILE_OR_DATA or DATA",
        _experiment("sharding_policy: FILE, workers: 3"), out="out", code=1, tf=True),
    Bad("file-over-file-names", _run(), r"^sources\.service\.sharding_policy: FILE over a source that is not a file "
        r"reader: split before interleave", _experiment("sharding_policy: FILE, split_before: interleave",
                                                         preset="guide"), out="out", code=1, tf=True),
]


@pytest.mark.parametrize("case", cases(CASES))
def test_refused(case, tmp_path, run_case):
    run_case(case, tmp_path)
