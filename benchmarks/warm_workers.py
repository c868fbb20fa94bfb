"""Do warm workers make the main job shorter without moving what it measures?

Runs `pipebench run experiments/deepfm.yaml --quick` in pairs, one run with a fresh process per trial
(`--set budget.trials_per_worker=1`, the way every trial ran before) and one with the default warm workers (up to
4 trials of one repeat, same environment and threads, in one worker: input trials one after another, train trials of
one batch shape timed in one measurement beside one ceiling), the order alternating from pair to pair (ABBA), and
prints:

- each run's wall time (from its config.yaml to its summary.md: the data, made once, is not counted) and how much
  of it went to starting workers (trials' `duration_sec` less their warm-up and windows);
- per configuration, its throughput in each run (95% interval) and the ratio warm / fresh within each pair, with
  whether the two intervals overlap;
- per train configuration, the verdict each run gives, and whether a confident one contradicts another;
- the action each run ends with (the configuration it names);
- in the warm runs, each trial measured on its own's throughput over its configuration's mean in that run, by its
  place in its worker (`worker_trials_before`): a later place that reads systematically faster or slower would be a
  bias (trials timed together, `measured_together` > 1, have no place of their own: they are counted apart).

Goals: the warm runs shorter (issue 35 wants the quick run ≤ 4 min; this shows what warm workers give of it);
no configuration's intervals apart between the two ways in a pair; no contradicting confident verdicts; the same
action.

    python benchmarks/warm_workers.py [--pairs 2] [--results DIR]

Run it alone on the machine: it measures.
"""
from __future__ import annotations

import argparse
import math
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
WAYS = {"fresh": ["--set", "budget.trials_per_worker=1"], "warm": []}


def _run(folder: Path, tag: str, way: str) -> tuple[Path, float]:
    """Run the quick job one way; give its run folder and its wall time."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pipebench", "run", str(ROOT / "experiments" / "deepfm.yaml"),
                           "--quick", "--set", f"results={folder / tag}", *WAYS[way]], capture_output=True, text=True)
    took = time.monotonic() - started
    (folder / f"{tag}.out").write_text(done.stdout)
    if done.returncode != 0:
        sys.exit(f"{tag}: pipebench run failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
    (run_dir,) = (folder / tag / "deepfm").iterdir()
    return run_dir, took


def _wall_sec(run_dir: Path) -> float:
    return (run_dir / "summary.md").stat().st_mtime - (run_dir / "config.yaml").stat().st_mtime


def _starting_sec(rows) -> float:
    """Give the seconds the run's trials spent outside their warm-up and windows: starting, building, exiting (a
    measurement's, whose trials each hold its whole span, once)."""
    outside = 0.0
    for row in rows:
        if row.duration_sec is None:
            continue
        windows = (row.windows_ended_sec - row.windows_started_sec) if row.windows_started_sec is not None else 0.0
        outside += (row.duration_sec - (row.warmup_sec or 0.0) - windows) / (row.measured_together or 1)
    return outside


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--results", type=Path, default=None, help="where the runs go (default: a temp folder)")
    args = parser.parse_args()
    folder = args.results or Path(tempfile.mkdtemp(prefix="pipebench-warm-"))
    runs: list[dict] = []
    for pair in range(args.pairs):
        for way in (("fresh", "warm") if pair % 2 == 0 else ("warm", "fresh")):
            tag = f"{way}-{pair + 1}"
            run_dir, took = _run(folder, tag, way)
            run = results.load(run_dir)
            rows = run.rows
            runs.append({"tag": tag, "way": way, "pair": pair, "dir": run_dir, "wall": _wall_sec(run_dir),
                         "starting": _starting_sec(rows), "rows": rows,
                         "action": action(rows, baseline_of(run.config), run_dir),  # as the run said it
                         "configs": {c.configuration_id: c for c in configurations(rows)}})
            print(f"{tag}: {took / 60:.1f} min in all, {runs[-1]['wall'] / 60:.1f} min from config to summary, "
                  f"{runs[-1]['starting']:.0f} s outside warm-ups and windows; load average "
                  f"{os.getloadavg()[0]:.2f}", flush=True)

    print("\n## wall time")
    for way in WAYS:
        walls = [r["wall"] / 60 for r in runs if r["way"] == way]
        starting = [r["starting"] for r in runs if r["way"] == way]
        print(f"- {way}: {', '.join(f'{w:.1f}' for w in walls)} min (median {statistics.median(walls):.1f}); "
              f"outside warm-ups and windows {', '.join(f'{s:.0f}' for s in starting)} s")
    ratio = [next(r["wall"] for r in runs if r["pair"] == p and r["way"] == "warm")
             / next(r["wall"] for r in runs if r["pair"] == p and r["way"] == "fresh") for p in range(args.pairs)]
    print(f"- warm / fresh wall time, per pair: {', '.join(f'{x:.2f}' for x in ratio)}")

    print("\n## throughput per configuration (95% interval), warm / fresh within each pair")
    ids = sorted(set.intersection(*(set(r["configs"]) for r in runs)),
                 key=lambda i: (runs[0]["configs"][i].mode, runs[0]["configs"][i].rows[0].pipeline,
                                runs[0]["configs"][i].rows[0].format or ""))
    apart, ratios = [], []
    print("| configuration | " + " | ".join(r["tag"] for r in runs) + " | warm / fresh per pair |")
    print("|---|" + "---|" * len(runs) + "---|")
    for cid in ids:
        first = runs[0]["configs"][cid]
        cells = [r["configs"][cid].throughput.text(",.0f") for r in runs]
        per_pair = []
        for p in range(args.pairs):
            warm, fresh = (next(r["configs"][cid].throughput for r in runs if r["pair"] == p and r["way"] == w)
                           for w in ("warm", "fresh"))
            per_pair.append(warm.mean / fresh.mean)
            if warm.low is not None and fresh.low is not None and (warm.low > fresh.high or warm.high < fresh.low):
                apart.append((cid, p + 1))
        ratios += per_pair
        print(f"| {first.mode} {first.rows[0].pipeline} {first.rows[0].format} | " + " | ".join(cells)
              + f" | {', '.join(f'{x:.2f}' for x in per_pair)} |")
    spread = statistics.stdev(math.log(x) for x in ratios) if len(ratios) > 1 else float("nan")
    print(f"geometric mean of warm / fresh over every configuration and pair: "
          f"{math.exp(statistics.fmean(math.log(x) for x in ratios)):.3f} (sd of the log ratios {spread:.3f})")

    print("\n## verdicts of the train configurations")
    contradictions = []
    for cid in ids:
        if runs[0]["configs"][cid].mode != "train":
            continue
        labels = [r["configs"][cid].verdict for r in runs]
        confident = {label for label in labels if label in CONFIDENT}
        if len(confident) > 1:
            contradictions.append(cid)
        first = runs[0]["configs"][cid]
        print(f"- {first.rows[0].pipeline} {first.rows[0].format}: " + ", ".join(
            f"{r['tag']} {label}" for r, label in zip(runs, labels)))

    print("\n## the action each run ends with")
    for r in runs:
        print(f"- {r['tag']}: {r['action'][:160]}")
    named = {r["action"].split(":")[0] for r in runs}

    print("\n## place in the worker (warm runs): each trial's throughput over its configuration's mean in that run")
    by_place: dict[tuple[str, int], list[float]] = {}
    for r in runs:
        if r["way"] != "warm":
            continue
        for config in r["configs"].values():
            mean = config.throughput.mean
            for row in config.rows:
                rate = row.examples_per_sec_mean
                if rate and mean and (row.measured_together or 1) > 1:
                    by_place.setdefault((config.mode, -row.measured_together), []).append(rate / mean)
                elif rate and mean and row.worker_trials_before is not None:
                    by_place.setdefault((config.mode, row.worker_trials_before), []).append(rate / mean)
    for (mode, place), found in sorted(by_place.items()):
        where = f"timed with {-place - 1} other(s)" if place < 0 else f"{place} trial(s) before it"
        print(f"- {mode}, {where}: {statistics.fmean(found):.3f} over {len(found)} trials")

    print("\n## goals")
    print(f"- warm runs shorter than fresh ones in every pair: {sum(x < 1 for x in ratio)} of {len(ratio)}")
    print(f"- configurations whose warm and fresh intervals are apart within a pair: {len(apart)} (goal 0)"
          + (f": {apart}" if apart else ""))
    print(f"- train configurations with contradicting confident verdicts: {len(contradictions)} (goal 0)")
    print(f"- the actions name {len(named)} configuration(s) (goal 1): {sorted(named)}")
    print(f"runs: {folder}")


if __name__ == "__main__":
    main()
