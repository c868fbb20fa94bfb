"""Is a second vCPU here a whole core? A CPU-bound kernel alone on one vCPU, then on every vCPU at once.

One fresh process per vCPU, pinned before it starts, runs sha256 over a 1 MiB block (C code, cache
resident) for a fixed time; all are released at one instant. Each pair (alone, then all together)
gives the per-vCPU speed with all busy over the speed alone: about 1 for whole cores, well below 1 for
hyperthreads of one core or a host whose neighbours take the CPU. The capacity model's page
(docs/performance/capacity_model.md) quotes it: per-example CPU costs that grow with the cores are then
the pipeline's own, not the host's.

    python benchmarks/host_cores.py [--pairs 6] [--seconds 0.4]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from pipebench.pinning import Pinning, placed, usable_cpus

KERNEL = """
import hashlib, sys, time
block = bytes(range(256)) * 4096
start, seconds = float(sys.argv[1]), float(sys.argv[2])
time.sleep(max(0.0, start - time.time()))
began = time.perf_counter()
done = 0
while time.perf_counter() - began < seconds:
    hashlib.sha256(block).digest()
    done += 1
print(done / (time.perf_counter() - began))
"""


def rates(cpus: tuple[int, ...], seconds: float) -> list[float]:
    """Run the kernel on each of `cpus` at once, one pinned process each; give each one's rate (MiB/s)."""
    start = time.time() + 0.5  # Python's start-up in every child, before the common release
    children = []
    for cpu in cpus:
        with placed(Pinning((cpu,))) as place:
            children.append(subprocess.Popen([sys.executable, "-c", KERNEL, repr(start), repr(seconds)],
                                             stdout=subprocess.PIPE, text=True, preexec_fn=place))
    return [float(child.communicate()[0]) for child in children]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=0.4)
    args = parser.parse_args()
    cpus = usable_cpus()
    print(f"{len(cpus)} vCPUs ({','.join(map(str, cpus))}); load average {os.getloadavg()[0]:.2f}")
    speeds = []
    for pair in range(args.pairs):
        alone = rates(cpus[:1], args.seconds)[0]
        together = rates(cpus, args.seconds)
        speeds.append(sum(together) / len(together) / alone)
        print(f"pair {pair + 1}: alone {alone:,.0f} MiB/s; all busy {sum(together) / len(together):,.0f} MiB/s "
              f"per vCPU: speed {speeds[-1]:.3f}", flush=True)
    print(f"per-vCPU speed with all {len(cpus)} busy, over one alone: {min(speeds):.2f}–{max(speeds):.2f} "
          f"({len(speeds)} pairs; load average now {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
