"""Does `pipebench diagnose` find the slow stage and prove rewrites that hold? Every corpus pipeline, end to end.

For each pipeline of tests/diagnose_corpus (the TF1 one is refused, so skipped), this runs the
diagnosis as `pipebench diagnose` does (fresh worker, default settings) and prints the bottleneck
stage, the rewrites proposed and kept with each gain's 95% interval, the combined gain and the time
the diagnosis took. Then it measures every kept rewrite once more, independently: in a fresh
process, the exported module (that rewrite alone, as pipebench writes it) against the user's own
input_fn, in paired interleaved rounds, and prints whether that gain's interval excludes 1 too. The
rewrite is built as a user would get it: their file with pipebench's patch applied (it can use their
nested functions), else the exported module.

Goals (issue 25): the per-line libsvm decode and the parse_single_example pipelines each get a
kept rewrite whose gain's lower end is at least 3×; the already well-built pipeline gets no kept
rewrite that fails to reproduce; each diagnosis takes at most 5 minutes.

    python benchmarks/diagnose.py [--rows 100000] [--rounds 5] [--only NAME ...]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from diagnose_fixtures import CORPUS, PIPELINES, kwargs_of  # noqa: E402

from pipebench.diagnose.export import module_name, rewritten_module  # noqa: E402
from pipebench.diagnose.run import diagnose  # noqa: E402
from pipebench.pipeline.function import parse_function_ref  # noqa: E402
from pipebench.measure.intervals import Interval  # noqa: E402


def _data(folder: Path, rows: int) -> dict[str, list[str]]:
    from pipebench.synth import SynthSpec, synthesize

    found = {}
    for fmt, files in (("libsvm", 4), ("tfrecord", 32)):
        described = synthesize(SynthSpec(rows=rows, out=folder / fmt, files=files, format=fmt, seed=7))
        found[fmt] = [str(folder / fmt / f.name) for f in described.files]
    return found


def remeasure(original: str, rewritten: str, kwargs: dict, rounds: int) -> Interval:
    """Give rewritten / original throughput measured in a fresh process (the `--remeasure` mode below)."""
    out = subprocess.run([sys.executable, __file__, "--remeasure", original, rewritten, json.dumps(kwargs),
                          str(rounds)], capture_output=True, text=True, check=True, env={**os.environ,
                                                                                          "TF_CPP_MIN_LOG_LEVEL": "3"})
    found = json.loads(out.stdout.strip().splitlines()[-1])
    return Interval(found["mean"], found["low"], found["high"], found["n"])


def _remeasure_here(original: str, rewritten: str, kwargs: dict, rounds: int) -> None:
    """Measure two input_fns in this process in paired interleaved rounds; print the ratio as JSON."""
    from pipebench.pipeline.user_code import import_user_module
    from pipebench.diagnose.rounds import calibrate, interleaved_rounds, rates
    from pipebench.measure.intervals import ratio_interval
    from pipebench.measure.windows import Arm
    from pipebench.measure.worker import input_loop

    import tensorflow as tf

    def count(element):
        return tf.cast(tf.shape(tf.nest.flatten(element)[0])[0], tf.int64)

    arms = []
    for name, path in (("original", original), ("rewritten", rewritten)):
        dataset = import_user_module(path).input_fn(**kwargs)
        arms.append(Arm(name, (lambda d: lambda: iter(d))(dataset), input_loop(tf, count)))
    calibrate(arms)
    windows = interleaved_rounds(arms, rounds, 1.0, 0.5, {}, seed=1)
    ratio = ratio_interval(rates(windows["rewritten"]), rates(windows["original"]))
    print(json.dumps(dataclasses.asdict(ratio)))


def _rewritten_file(found, rewrite, folder: Path, name: str) -> tuple[Path, str]:
    """Give a file whose input_fn builds the rewrite as a user gets it: their file with pipebench's patch applied,
    or, when there is no patch, the exported module (that rewrite alone); and which of the two."""
    from pipebench.diagnose.patch import NoPatch, patched_text

    folder.mkdir(parents=True)
    try:
        path = folder / f"{name}.py"
        path.write_text(patched_text(found, rewrite, (CORPUS / f"{name}.py").read_text()))
        return path, "the patched file"
    except NoPatch:
        alone = dataclasses.replace(found, rewrites=(rewrite,), combined=None)
        path = folder / module_name(found)
        path.write_text(rewritten_module(alone))
        return path, "the exported module"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", nargs="+", choices=PIPELINES)
    parser.add_argument("--remeasure", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.remeasure:
        original, rewritten, kwargs, rounds = args.remeasure
        _remeasure_here(original, rewritten, json.loads(kwargs), int(rounds))
        return
    work = Path(tempfile.mkdtemp(prefix="pipebench-diagnose-bench-"))
    data = _data(work / "data", args.rows)
    print(f"work folder {work} (each pipeline's progress-NAME.txt and out-NAME/)")
    print(f"{args.rows:,} rows (libsvm: 4 files, TFRecord: 32 files), default settings, {args.rounds} rounds; "
          f"{len(os.sched_getaffinity(0))} vCPUs; load average {os.getloadavg()[0]:.2f} at the start")
    for name in args.only or PIPELINES:
        kwargs = kwargs_of(name, data)
        started = time.monotonic()
        progress = open(work / f"progress-{name}.txt", "w")

        def log(text: str) -> None:  # called within this iteration only (by diagnose below)
            progress.write(f"{time.monotonic() - started:6.1f} s  {text}\n")  # noqa: B023
            progress.flush()  # noqa: B023

        found, out = diagnose(parse_function_ref(f"{CORPUS / name}.py:input_fn"), kwargs, None,
                              work / f"out-{name}", args.rounds, log=log)
        took = time.monotonic() - started
        neck = found.stages[found.bottleneck]
        print(f"\n## {name}: diagnosed in {took:.0f} s; load average {os.getloadavg()[0]:.2f}")
        print(f"bottleneck: stage {neck.index} {neck.label} ({found.costs[[c.stage for c in found.costs].index(neck.index)].share:.0%} "
              "of the CPU)" if neck.index in [c.stage for c in found.costs] else f"bottleneck: stage {neck.index}")
        for rewrite in found.rewrites:
            gain = "named only" if rewrite.gain is None else rewrite.gain.text(".2f", unit="×")
            line = f"  {'KEPT' if rewrite.kept else 'no  '} {rewrite.name}: {gain}"
            if rewrite.kept:
                path, how = _rewritten_file(found, rewrite, work / f"{name}-{rewrite.kind}-{rewrite.stage}", name)
                again = remeasure(str(CORPUS / f"{name}.py"), str(path), kwargs, args.rounds)
                holds = again.low is not None and again.low > 1.0
                line += (f"; independently ({how}) {again.text('.2f', unit='×')}: "
                         f"{'reproduces' if holds else 'DOES NOT reproduce'}")
            print(line)
        if found.combined is not None:
            print(f"  combined: {found.combined.gain.text('.2f', unit='×') if found.combined.gain else '—'}; "
                  f"{found.combined.verdict}")
        if found.train is not None:
            for terms in found.train.terms:
                print(f"  train ({terms.pipeline}): input costs training {terms.slowdown.text('.0%')}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
