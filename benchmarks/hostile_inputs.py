"""Hostile inputs: the time and peak memory of refusing each, beside reading valid input of the same size.

Each arm is one fresh process (`pipebench convert`, or the experiment loader `run` calls first), timed
from the outside (start-up and imports included), its peak RSS read from its own /proc/self/status
(VmHWM) at exit. Rounds are paired and interleaved in a random order; a ratio's interval is over the
per-round ratios (pipebench.measure.intervals). Goal: every refusal within 2x the time of its valid
twin, in memory that does not grow with the input.

    python benchmarks/hostile_inputs.py [--rounds 3] [--big] [--workdir DIR]

Cases (the sizes of issue 28's probe; --big adds the 2 GiB file without a newline):
- a file without a newline (sparse, all NUL) of 128 MiB and 512 MiB, vs valid libsvm of that size;
- 256 MiB of newlines, vs valid libsvm of that size;
- a 1 MB gzip of 1 GiB of newlines, vs a gzip of valid libsvm of the same stored size;
- a 330-byte YAML "billion laughs" in `name:`, vs a valid experiment of the same size;
- a 50 MB experiment file, vs a valid experiment at the size cap (the most a refusal reads).
"""
from __future__ import annotations

import argparse
import datetime as dt
import gzip
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from pipebench.measure.intervals import ratio_interval
from pipebench.measure.round_order import round_order
from pipebench.yamlfile import MAX_FILE_BYTES

MIB = 1 << 20
_CHILD = r"""
import atexit, os, runpy, sys

def report():
    hwm_kb = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    with open(os.environ["HOSTILE_REPORT"], "w") as f:
        f.write(str(hwm_kb))

atexit.register(report)
if sys.argv[1] == "experiment":  # what `pipebench run FILE` does first, without then running trials
    from pipebench.config import load_experiment
    from pipebench.errors import PipebenchError
    try:
        load_experiment(sys.argv[2])
    except PipebenchError as err:
        print(f"pipebench: error: {err}", file=sys.stderr)
        sys.exit(1)
else:
    sys.argv = ["pipebench", *sys.argv[2:]]
    runpy.run_module("pipebench.cli", run_name="__main__")
"""


@dataclass
class Case:
    """A hostile input and its valid twin: what each arm runs, and the size the table names."""

    name: str
    size: str
    hostile: list[str]
    valid: list[str]


@dataclass
class Draw:
    seconds: float
    peak_mib: float
    code: int
    said: str


def _run(args: list[str], work: Path) -> Draw:
    out = work / "out"
    subprocess.run(["rm", "-rf", str(out)], check=True)
    report = work / "peak_kb"
    env = dict(os.environ, HOSTILE_REPORT=str(report), TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("PIPEBENCH_DEBUG", None)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _CHILD, *args], cwd=work, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    said = (done.stderr.strip().splitlines() or [""])[-1] if done.returncode else "ok"
    return Draw(seconds, int(report.read_text()) / 1024, done.returncode, said)


def _valid_libsvm(path: Path, size: int, compressed: bool = False) -> None:
    """Write valid libsvm rows (39 fields) of `size` bytes (stored size, when compressed), whole lines only."""
    rng = random.Random(7)
    lines = []
    for _ in range(20_000):
        ids = sorted(rng.sample(range(117_581), 39))
        lines.append(f"{rng.randint(0, 1)} " + " ".join(f"{i}:{rng.random():.6f}" for i in ids) + "\n")
    block = "".join(lines).encode()
    if compressed:  # gzip members of about 1 MiB of rows each, until the stored size is reached
        member = gzip.compress(block[: block.rfind(b"\n", 0, MIB) + 1], compresslevel=6)
        block, size = member, max(len(member), size // len(member) * len(member))
    with open(path, "wb") as f:
        written = 0
        while written + len(block) <= size:
            f.write(block)
            written += len(block)
        if not compressed:
            rest = block[: size - written]
            f.write(rest[: rest.rfind(b"\n") + 1])


def _no_newline(path: Path, size: int) -> None:
    with open(path, "wb") as f:
        f.truncate(size)


def _newlines(path: Path, size: int, compressed: bool = False) -> None:
    block = b"\n" * MIB
    if compressed:
        block = gzip.compress(block, compresslevel=9)  # one member per MiB: a 1 GiB stream in ~1 MB
    with open(path, "wb") as f:
        for _ in range(size // MIB):
            f.write(block)


def _laughs() -> str:
    levels = ['&a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    levels += [f"&a{k} [{', '.join([f'*a{k - 1}'] * 9)}]" for k in range(1, 9)]
    return f"name: [{', '.join(levels)}]\n"


def _experiment(size: int) -> str:
    """Give a valid experiment of `size` bytes: a small one padded with a comment."""
    text = "name: twin\ndata: {synth: {rows: 1000, files: 1}}\ngrid: {batch_size: [256, 1024]}\n"
    return text + "#" * (size - len(text) - 1) + "\n"


def _cases(work: Path, big: bool) -> list[Case]:
    convert = ["cli", "convert"]
    cases = []
    sizes = [128 * MIB, 512 * MIB] + ([2048 * MIB] if big else [])
    for size in sizes:
        _no_newline(work / f"nonl-{size}", size)
        _valid_libsvm(work / f"valid-{size}.libsvm", size)
        cases.append(Case("no newline (sparse, all NUL)", f"{size // MIB:,} MiB",
                          [*convert, f"nonl-{size}", "--out", "out"],
                          [*convert, f"valid-{size}.libsvm", "--out", "out"]))
    _newlines(work / "blank", 256 * MIB)
    _valid_libsvm(work / "valid-256.libsvm", 256 * MIB)
    cases.append(Case("newlines only", "256 MiB", [*convert, "blank", "--out", "out"],
                      [*convert, "valid-256.libsvm", "--out", "out"]))
    _newlines(work / "blank.gz", 1024 * MIB, compressed=True)
    stored = (work / "blank.gz").stat().st_size
    _valid_libsvm(work / "valid.libsvm.gz", stored, compressed=True)
    cases.append(Case("gzip of 1 GiB of newlines", f"{stored / MIB:.1f} MiB stored",
                      [*convert, "blank.gz", "--out", "out"], [*convert, "valid.libsvm.gz", "--out", "out"]))
    laughs = _laughs()
    (work / "laughs.yaml").write_text(laughs)
    (work / "twin.yaml").write_text(_experiment(len(laughs)))
    cases.append(Case("YAML billion laughs in name:", f"{len(laughs)} B", ["experiment", "laughs.yaml"],
                      ["experiment", "twin.yaml"]))
    (work / "huge.yaml").write_text(_experiment(50 * 10**6))
    (work / "cap.yaml").write_text(_experiment(MAX_FILE_BYTES))
    cases.append(Case("experiment file of 50 MB", "50 MB (twin: 1 MiB, the cap)", ["experiment", "huge.yaml"],
                      ["experiment", "cap.yaml"]))
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--big", action="store_true", help="add a 2 GiB file without a newline")
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    print(f"{dt.date.today()}; cpus: {len(os.sched_getaffinity(0))}; load average at start: "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}; {args.rounds} paired rounds")
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        work = Path(tmp)
        cases = _cases(work, args.big)
        _run(["cli", "convert", "valid-256.libsvm", "--out", "out"], work)  # numba's cache and the page cache warm
        print("| input | size | refused with | refusal s | valid twin s | refusal / valid (95% interval) | "
              "peak RSS refusal / valid MiB |")
        print("|---|---|---|---|---|---|---|")
        for case in cases:
            hostile, valid = [], []
            for r in range(args.rounds):
                for kind, command in round_order([("h", case.hostile), ("v", case.valid)], r, f"{case.name}"):
                    (hostile if kind == "h" else valid).append(_run(command, work))
            bad = [d for d in valid if d.code != 0] + [d for d in hostile if d.code == 0]
            if bad:
                raise SystemExit(f"{case.name}: an arm did not do what it should: {bad[0]}")
            ratio = ratio_interval([d.seconds for d in hostile], [d.seconds for d in valid])
            reason = hostile[0].said.removeprefix("pipebench: error: ").split(": ", 1)[-1]  # without FILE:LINE
            said = reason.split(" (")[0].split(", the")[0]
            print(f"| {case.name} | {case.size} | {said} | {_median(hostile, 'seconds'):.2f} | "
                  f"{_median(valid, 'seconds'):.2f} | {ratio.text('.2f', unit='x')} | "
                  f"{max(d.peak_mib for d in hostile):.0f} / {max(d.peak_mib for d in valid):.0f} |", flush=True)
    print(f"load average at end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


def _median(draws: list[Draw], field: str) -> float:
    values = sorted(getattr(d, field) for d in draws)
    return values[len(values) // 2]


if __name__ == "__main__":
    main()
