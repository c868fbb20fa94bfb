"""Do the input-bound verdicts hold between identical runs, on an idle and on a busy machine?

Runs `pipebench run experiments/deepfm.yaml --quick` `--idle` times on the machine as it is, then
`--busy` times with one core kept busy by another process (started and stopped here: a Python loop
pinned to the last CPU), and prints, per train configuration and run, the figure its verdict read
(its basis: the slowdown for a CPU trainer, the waiting share for an accelerator) with its 95%
interval and the label, the busy flag, and each run's wall time. Then the goals:

- across the idle runs no configuration gets two different confident labels;
- every busy run is flagged as such in its summary;
- no busy run gives a confident label that contradicts the idle runs' label;
- every idle run ends with an action naming the same configuration;
- each idle quick run takes at most 4 minutes (issue 35; it took 5-10 before train trials of a warm worker were timed
  in one measurement).

Run it alone on the machine: it measures.

It also prints the median 95% interval width of that figure over the idle runs (a goal of ≤ 6
percentage points when every verdict read the waiting share; the slowdown, a ratio of two throughputs,
spans more, and its verdicts sit far from the thresholds).

    python benchmarks/verdict_stability.py [--idle 5] [--busy 5] [--results DIR] [--idle-run RUN_DIR ...]
                                           [--busy-run RUN_DIR ...]

`--idle-run` and `--busy-run` count run folders made before by this script (its `--results` folder's
idle-N / busy-N runs, e.g. the busy runs of another session) among the idle or busy runs; their wall
time reads from the run's files' times. Each run's output is kept beside it (TAG.out).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pipebench.results as results
from pipebench.report.action import action, baseline_of
from pipebench.results.configurations import configurations

ROOT = Path(__file__).resolve().parents[1]
CONFIDENT = ("not input-bound", "moderately input-bound", "highly input-bound")
BUSY_LOOP = "import os\nos.sched_setaffinity(0, {max(os.sched_getaffinity(0))})\nwhile True:\n    pass\n"


def _run(results_dir: Path, tag: str) -> tuple[Path, float]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pipebench", "run", str(ROOT / "experiments" / "deepfm.yaml"),
                           "--quick", "--set", f"results={results_dir / tag}"], capture_output=True, text=True)
    took = time.monotonic() - started
    (results_dir / f"{tag}.out").write_text(done.stdout)
    if done.returncode != 0:
        sys.exit(f"{tag}: pipebench run failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
    (run_dir,) = (results_dir / tag / "deepfm").iterdir()
    return run_dir, took


def _verdicts(run_dir: Path) -> dict[str, tuple[str, str, float, float, float, bool]]:
    """Give each train configuration's (label, basis, % of the figure it read, low, high, busy)."""
    run = results.load(run_dir)
    out = {}
    for config in configurations(run.rows):
        read = config.pooled.input_cost
        if config.mode != "train" or read is None or not read.decided:  # one round: no interval, no row to judge
            continue
        row = config.rows[0]
        out[f"{row.pipeline} / {row.format}"] = (config.verdict, config.basis, 100 * read.mean, 100 * read.low,
                                                       100 * read.high, config.busy)
    return out


def _action(run_dir: Path) -> str:
    """Give the action sentence of a run, as its output and summary say it (pipebench.report.action)."""
    run = results.load(run_dir)
    return action(run.rows, baseline_of(run.config), run_dir)


def _wall_sec(run_dir: Path) -> float:
    """Give a given run's wall time: from its config.yaml (written first) to its summary.md (written last); the
    data made before the run started is not counted."""
    return (run_dir / "summary.md").stat().st_mtime - (run_dir / "config.yaml").stat().st_mtime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle", type=int, default=5)
    parser.add_argument("--busy", type=int, default=5)
    parser.add_argument("--results", type=Path, default=None, help="where the runs go (default: a temp folder)")
    parser.add_argument("--idle-run", type=Path, action="append", default=[],
                        help="a quick run made on an idle machine before, counted among the idle runs")
    parser.add_argument("--busy-run", type=Path, action="append", default=[],
                        help="a busy run made by this script before, counted among the busy runs")
    args = parser.parse_args()
    folder = args.results or Path(tempfile.mkdtemp(prefix="pipebench-verdicts-"))
    runs: list[tuple[str, Path, float]] = []
    for i, run_dir in enumerate(args.idle_run):
        runs.append((f"idle {i + 1} (given)", run_dir, _wall_sec(run_dir)))
    given_busy = [(f"busy {i + 1} (given)", run_dir, _wall_sec(run_dir)) for i, run_dir in enumerate(args.busy_run)]
    for i in range(len(args.idle_run), len(args.idle_run) + args.idle):
        run_dir, took = _run(folder, f"idle-{i + 1}")
        runs.append((f"idle {i + 1}", run_dir, took))
        print(f"idle {i + 1}: {took / 60:.1f} min, load average {os.getloadavg()[0]:.2f}", flush=True)
    runs += given_busy
    for i in range(len(args.busy_run), len(args.busy_run) + args.busy):
        hog = subprocess.Popen([sys.executable, "-c", BUSY_LOOP])
        try:
            run_dir, took = _run(folder, f"busy-{i + 1}")
        finally:
            hog.kill()
            hog.wait()
        runs.append((f"busy {i + 1}", run_dir, took))
        print(f"busy {i + 1}: {took / 60:.1f} min, load average {os.getloadavg()[0]:.2f}", flush=True)

    table = {name: _verdicts(run_dir) for name, run_dir, _ in runs}
    configs = sorted({key for found in table.values() for key in found})
    print("\nthe figure each verdict read (95% interval) and the label, per run")
    print("| configuration | " + " | ".join(name for name, _, _ in runs) + " |")
    print("|---|" + "---|" * len(runs))
    for key in configs:
        cells = []
        for name, _, _ in runs:
            found = table[name].get(key)
            cells.append("—" if found is None else
                         f"{found[1]} {found[2]:.1f}% ({found[3]:.1f}–{found[4]:.1f}) "
                         f"{found[0].replace(' input-bound', '')}" + (" [busy]" if found[5] else ""))
        print(f"| {key} | " + " | ".join(cells) + " |")

    idle = [name for name, _, _ in runs if name.startswith("idle")]
    busy = [name for name, _, _ in runs if name.startswith("busy")]
    flips = {key: {table[n][key][0] for n in idle if key in table[n] and table[n][key][0] in CONFIDENT}
             for key in configs}
    widths = [table[n][key][4] - table[n][key][3] for n in idle for key in table[n]]
    idle_label = {key: next(iter(labels)) for key, labels in flips.items() if len(labels) == 1}
    contradictions = [(n, key) for n in busy for key, found in table[n].items()
                      if found[0] in CONFIDENT and key in idle_label and found[0] != idle_label[key]]
    flagged = [n for n, run_dir, _ in runs if n in busy and "**Busy machine:**" in (run_dir / "summary.md").read_text()]
    idle_minutes = [took / 60 for name, _, took in runs if name in idle]
    actions = {name: _action(run_dir) for name, run_dir, _ in runs}
    print("\ngoals")
    print(f"- idle runs, configurations with two different confident labels: "
          f"{sum(len(v) > 1 for v in flips.values())} (goal 0)")
    print(f"- busy runs flagged as busy in their summary: {len(flagged)} of {len(busy)} (goal all)")
    print(f"- busy runs' confident labels contradicting the idle label: {len(contradictions)} (goal 0)"
          + (f": {contradictions}" if contradictions else ""))
    named = {actions[n].split(":")[0].split(",")[0] for n in idle}
    print(f"- idle runs' actions name {len(named)} configuration(s) (goal 1): {sorted(named)}")
    print(f"- idle quick runs: {', '.join(f'{m:.1f}' for m in idle_minutes)} min (goal each ≤ 4); busy runs: "
          + ", ".join(f"{took / 60:.1f}" for name, _, took in runs if name in busy) + " min")
    print("\nthe action each run ends with")
    for name, _, _ in runs:
        print(f"- {name}: {actions[name]}")
    bases = sorted({found[1] for n in idle for found in table[n].values()})
    print(f"idle runs, median 95% interval width of the figure the verdicts read ({', '.join(bases)}): "
          f"{statistics.median(widths) if widths else float('nan'):.1f} pp")
    print(f"runs: {folder}")


if __name__ == "__main__":
    main()
