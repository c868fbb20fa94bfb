"""How much CPU does pipebench itself take beside what it measures? The parent process, during a trial and during a
diagnosis, with today's watcher and with the one before it (e5ab374), side by side in one run.

While a worker measures, its parent waits: the trial manager (the watcher: timeout, memory cap, the worker's
progress; the sampler thread the usage figures come from) or `pipebench diagnose`'s CLI (the watcher and the
progress file). Everything the parent does runs on the 2 vCPUs the worker measures on, and counts as "other
processes" in the busy meter (host busy CPU less the worker's tree). This runs each real thing in turn, ABAB:

- a trial: `run_worker` of the aws-sample preset on 100,000 synthetic TFRecord rows, train mode, short windows;
- a diagnosis: `pipebench diagnose`'s `run_worker` of tests/diagnose_corpus/well_built.py on the same rows;

once with the watcher (and the sampler's tree reading) as they are, once with the old ones: the 10 Hz poll whose
every wake listed the worker's tree with psutil (a scan of all of /proc) and summed its memory, and the sampler
reading each process through psutil. The parent's CPU is its own (user + system, every thread) over the wall time
the worker ran, in % of one vCPU.

Goal (issue 35): ≤ 1% of a vCPU during a trial and during a diagnosis.

    python benchmarks/observer.py [--repeats 2]

Run it alone on the machine.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
GOAL_PCT = 1.0


# --- the watcher and the sampler's tree reading as they were at e5ab374 ------------------------------------------

def _old_tree_rss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def old_watch(proc, limits, clock, started, check=None):
    """pipebench.measure.manager.watch at e5ab374 (its kill on Ctrl-C kept)."""
    from pipebench.children import kill_group

    killed_for, peak_rss = None, 0
    try:
        watched = psutil.Process(proc.pid)
        while proc.poll() is None:
            elapsed = clock() - started
            rss = _old_tree_rss(watched)
            peak_rss = max(peak_rss, rss)
            if rss > limits.memory_cap_bytes:
                killed_for = ("memory_cap", "killed")
            elif elapsed > limits.timeout_sec:
                killed_for = ("timeout", "killed")
            elif check is not None:
                killed_for = check()
            if killed_for:
                kill_group(proc)
                break
            time.sleep(0.1)
    except BaseException:
        kill_group(proc)
        raise
    return killed_for, peak_rss


def _old_tree_cpu_seconds(self, now):
    """pipebench.measure.sampler.Sampler._tree_cpu_seconds at e5ab374: psutil, the tree listed once a second."""
    if getattr(self, "_old_tree", None) is None or now - self._old_tree_t >= 1.0:
        try:
            self._old_tree = [self._root, *self._root.children(recursive=True)]
            self._old_tree_t = now
        except psutil.Error:
            return {}, 0, 0
    cpu, rss, threads = {}, 0, 0
    for index, process in enumerate(self._old_tree):
        try:
            with process.oneshot():
                if process.status() != psutil.STATUS_ZOMBIE:
                    times = process.cpu_times()
                    cpu[(process.pid, process.create_time())] = times.user + times.system
                    rss += process.memory_info().rss
                    threads += process.num_threads()
                    continue
        except psutil.Error:
            pass
        if index == 0:
            return {}, 0, 0
    return cpu, rss, threads


@contextlib.contextmanager
def old_watcher():
    """Run the block with the watcher and the sampler's tree reading of e5ab374."""
    from pipebench.measure import manager, sampler

    saved = manager.watch, sampler.Sampler._tree_cpu_seconds
    manager.watch, sampler.Sampler._tree_cpu_seconds = old_watch, _old_tree_cpu_seconds
    try:
        yield
    finally:
        manager.watch, sampler.Sampler._tree_cpu_seconds = saved


# --- what runs ---------------------------------------------------------------------------------------------------

def _parent_cpu(run) -> tuple[float, float]:
    """Run `run()`; give (the parent's CPU over the wall time, in % of one vCPU; the wall seconds)."""
    cpu, wall = time.process_time(), time.monotonic()
    run()
    wall = time.monotonic() - wall
    return 100.0 * (time.process_time() - cpu) / wall, wall


def trial(data: list[str], folder: Path):
    from pipebench.measure.manager import Limits, run_worker
    from pipebench.measure.sampler import Sampler
    from pipebench.testing import trial_spec

    spec = trial_spec(files=tuple(data), mode="train", batch_size=1024,
                      measurement={"warmup_max_sec": 3.0, "window_sec": 0.5, "windows": 6})

    def run():
        outcome = run_worker(spec, folder, Limits(600, 8 << 30), sampler_factory=lambda pid: Sampler(pid))
        assert outcome.record.status.value == "ok", outcome.record.reason
    return run


def diagnosis(data: list[str], folder: Path):
    from pipebench.diagnose.records import Request
    from pipebench.diagnose.run import run_worker

    module = ROOT / "tests" / "diagnose_corpus" / "well_built.py"

    def run():
        scratch = folder / f"d{time.monotonic_ns()}"
        scratch.mkdir(parents=True)
        request = Request(str(module), "input_fn", {"files": data, "batch_size": 1024}, None, 5, 0.5, 0.2, 3.0,
                          60_000, str(scratch / "scratch"), str(scratch / "progress.txt"))
        run_worker(request, scratch, lambda text: None)
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    from pipebench.synth import SynthSpec, synthesize

    work = Path(tempfile.mkdtemp(prefix="pipebench-observer-"))
    described = synthesize(SynthSpec(rows=100_000, out=work / "data", files=4, format="tfrecord", seed=3))
    data = [str(work / "data" / f.name) for f in described.files]
    print(f"{len(os.sched_getaffinity(0))} vCPUs; load average {os.getloadavg()[0]:.2f} at the start; "
          f"work folder {work}")
    found: dict[tuple[str, str], list[float]] = {}
    for repeat in range(args.repeats):
        for what, make in (("trial", trial), ("diagnosis", diagnosis)):
            for watcher in (("old", "new") if repeat % 2 == 0 else ("new", "old")):
                run = make(data, work / f"{what}-{watcher}-{repeat}")
                with old_watcher() if watcher == "old" else contextlib.nullcontext():
                    pct, wall = _parent_cpu(run)
                found.setdefault((what, watcher), []).append(pct)
                print(f"{what:9s} {watcher} watcher: the parent used {pct:5.2f}% of a vCPU over {wall:5.1f} s")
                sys.stdout.flush()
    print("\n| what | watcher | parent CPU, % of one vCPU (each run) | median |\n|---|---|---|---|")
    for (what, watcher), values in found.items():
        print(f"| {what} | {watcher} | {', '.join(f'{v:.2f}' for v in values)} | {statistics.median(values):.2f} |")
    new = [statistics.median(v) for (what, watcher), v in found.items() if watcher == "new"]
    print(f"\ngoal: the new watcher ≤ {GOAL_PCT}% during a trial and a diagnosis: "
          f"{'met' if all(v <= GOAL_PCT for v in new) else 'NOT met'}")


if __name__ == "__main__":
    main()
