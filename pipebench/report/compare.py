"""`pipebench compare RUN_A RUN_B`: each configuration both runs measured, side by side, and B / A.

Each run's figures are its own (configurations pooled within one run, never across the two). The two
runs were measured at different times, so their rounds cannot be paired: the ratio's 95% interval is
Welch's unpaired t interval on log throughput — over repeat means when both runs have two or more
repeats of the configuration, else over the windows of all its repeats (narrower than the noise
between processes; the output says which). Configurations match on `configuration_id`, else on what
names them (mode, pipeline, format, source mode, ordering, batch, threads, env) when the ids differ,
e.g. because the measurement settings changed between the runs.
"""
from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipebench.errors import PipebenchError
from pipebench.measure.figures import SLOWDOWN
from pipebench.measure.intervals import CONFIDENCE, Interval, difference_verdict, t_quantile
from pipebench.results.configurations import LABEL_COLUMNS, NOT_COMPARED, Configuration, configurations
from pipebench.report.tables import ENV_COLUMNS, env_of, threads_of
from pipebench.report.verdicts import FIGURE, trainer_text
from pipebench.results import RunResults, load
from pipebench.typed import to_json

#: What names a configuration when two runs gave it different ids.
MATCH_COLUMNS = (*LABEL_COLUMNS, *ENV_COLUMNS)
UNPAIRED = ("Ratios are B / A throughput, **unpaired**: the runs were measured at different times, so their rounds "
            "cannot be paired. The 95% interval is Welch's t on log throughput over repeat means (over windows when "
            "either run has one repeat of the configuration: narrower than the noise between processes); a ratio "
            "whose interval holds 1 is no measurable difference.")


def unpaired_ratio(a: Sequence[float], b: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """Give b / a as the ratio of geometric means, with Welch's t interval on the logs (no interval below two each)."""
    logs_a, logs_b = [math.log(v) for v in a], [math.log(v) for v in b]
    difference = statistics.fmean(logs_b) - statistics.fmean(logs_a)
    n = min(len(logs_a), len(logs_b))
    if n < 2:
        return Interval(math.exp(difference), None, None, n)
    share_a = statistics.variance(logs_a) / len(logs_a)
    share_b = statistics.variance(logs_b) / len(logs_b)
    spread = math.sqrt(share_a + share_b)
    if spread == 0.0:
        return Interval(math.exp(difference), math.exp(difference), math.exp(difference), n)
    df = (share_a + share_b) ** 2 / (share_a ** 2 / (len(logs_a) - 1) + share_b ** 2 / (len(logs_b) - 1))
    half = t_quantile(0.5 + confidence / 2.0, df) * spread
    return Interval(math.exp(difference), math.exp(difference - half), math.exp(difference + half), n)


def _window_rates(config: Configuration) -> list[float]:
    """Give the examples/sec of every window of the configuration's own arm, over all its repeats."""
    arm = config.mode
    return [w["examples"] / w["seconds"] for row in config.rows for w in json.loads(row.windows_json or "[]")
            if w["arm"] == arm and w["seconds"] > 0]


@dataclass(frozen=True)
class Pair:
    """One configuration as two runs measured it, and B / A."""

    a: Configuration
    b: Configuration
    matched_on: str  # "configuration_id" or "labels"
    basis: str  # "repeat means" or "windows"
    ratio: Interval

    @property
    def verdict(self) -> str:
        return NOT_COMPARED if not self.ratio.decided else difference_verdict(self.ratio)


def _pair(a: Configuration, b: Configuration, matched_on: str) -> Pair:
    if a.repeats > 1 and b.repeats > 1:
        return Pair(a, b, matched_on, "repeat means", unpaired_ratio(list(a.by_repeat().values()),
                                                                     list(b.by_repeat().values())))
    return Pair(a, b, matched_on, "windows", unpaired_ratio(_window_rates(a), _window_rates(b)))


def _labels(config: Configuration) -> tuple:
    return tuple(getattr(config.rows[0], column) for column in MATCH_COLUMNS)


def pairs(found_a: Sequence[Configuration], found_b: Sequence[Configuration]) -> tuple[list[Pair], int, int]:
    """Give the configurations both runs measured, paired (by id, else by labels when unique in each run), and how
    many only A and only B measured."""
    by_id = {c.configuration_id: c for c in found_b}
    out = [_pair(a, by_id[a.configuration_id], "configuration_id") for a in found_a if a.configuration_id in by_id]
    left = [a for a in found_a if a.configuration_id not in by_id]
    taken = {p.b.configuration_id for p in out}
    right = [b for b in found_b if b.configuration_id not in taken]
    labels_b: dict[tuple, list[Configuration]] = {}
    for b in right:
        labels_b.setdefault(_labels(b), []).append(b)
    labels_a: dict[tuple, list[Configuration]] = {}
    for a in left:
        labels_a.setdefault(_labels(a), []).append(a)
    for key, (a, *more) in labels_a.items():
        if not more and len(labels_b.get(key, [])) == 1:  # two configurations of one name in a run: ambiguous
            out.append(_pair(a, labels_b[key][0], "labels"))
    matched = len(out)
    order = {mode: i for i, mode in enumerate(("train", "input", "synthetic"))}
    out.sort(key=lambda p: (order.get(p.a.mode, 9), -p.a.throughput.mean))
    return out, len(found_a) - matched, len(found_b) - matched


#: 1 (2026-11-26): the first versioned, typed shape; every interval {"mean", "low", "high", "n"}.
COMPARE_VERSION = 1


@dataclass(frozen=True)
class Side:
    """One run's figures of a configuration: its repeats pooled."""

    configuration_id: str
    repeats: int
    examples_per_sec: Interval
    busy_machine: bool
    input_wait_pct: Interval | None
    input_slowdown_pct: Interval | None
    input_bound_basis: str | None  # the figure its verdict read (train mode), else None
    verdict: str | None
    trainer: str | None


@dataclass(frozen=True)
class Compared:
    """A configuration both runs measured, and B / A."""

    label: dict[str, Any]  # what names it: mode, pipeline, format, source mode, ordering, batch, threads, env
    matched_on: str  # "configuration_id" or "labels"
    a: Side
    b: Side
    basis: str  # what the unpaired interval is over: "repeat means" or "windows"
    ratio_b_over_a: Interval
    verdict: str


@dataclass(frozen=True)
class Comparison:
    """What `pipebench compare RUN_A RUN_B --format json` prints."""

    schema_version: int  # the layout version (pipebench.versioned)
    unpaired: bool  # always true: two runs' rounds cannot be paired
    run_a: str
    run_b: str
    warnings: tuple[str, ...]
    configurations: tuple[Compared, ...]
    only_in_a: int
    only_in_b: int

    def to_json(self) -> dict:
        return to_json(self)


def _side(config: Configuration) -> Side:
    waiting, slowdown = config.pooled.waiting, config.pooled.slowdown
    return Side(config.configuration_id, config.repeats, config.throughput, config.busy,
                None if waiting is None else waiting.scaled(100.0), None if slowdown is None else slowdown.scaled(100.0),
                config.basis, config.verdict, trainer_text(config) if config.basis else None)


def compare(run_a: RunResults, run_b: RunResults) -> Comparison:
    """Give the comparison of two runs; PipebenchError when they measured different data."""
    data = (run_a.data.fingerprint, run_b.data.fingerprint)
    if data[0] != data[1]:
        raise PipebenchError(f"compare: {run_a.run_dir} and {run_b.run_dir} measured different data sets "
                             f"({data[0]} vs {data[1]}): throughput compares only on the same data")
    hosts = (run_a.machine.host_fingerprint, run_b.machine.host_fingerprint)
    found, only_a, only_b = pairs(configurations(run_a.rows), configurations(run_b.rows))
    return Comparison(
        COMPARE_VERSION, True, str(run_a.run_dir), str(run_b.run_dir),
        () if hosts[0] == hosts[1] else (
            f"the runs were measured on different hosts ({hosts[0]} vs {hosts[1]}): a difference may be the "
            "machine's, not the configuration's",),
        tuple(Compared({c: getattr(p.a.rows[0], c) for c in MATCH_COLUMNS}, p.matched_on, _side(p.a), _side(p.b),
                       p.basis, p.ratio, p.verdict) for p in found),
        only_a, only_b)


def _text(found: Interval | None, fmt: str, unit: str = "") -> str:
    """Give an interval as Interval.text writes it ('—' for none)."""
    return "—" if found is None else found.text(fmt, unit=unit)


def _input_cost(side: Side) -> str:
    """Give the figure a side's verdict read, named: 'slowdown 41.0% (33.2–47.6%)' or 'waiting share 2.1% (…)'."""
    if side.input_bound_basis is None:
        return "—"
    found = side.input_slowdown_pct if side.input_bound_basis == SLOWDOWN else side.input_wait_pct
    return f"{FIGURE[side.input_bound_basis]} {_text(found, '.1f', '%')}"


def to_markdown(result: Comparison) -> str:
    """Give the comparison as Markdown: one line per run per configuration (a run column), B / A on B's line."""
    out = ["# Compare runs (unpaired)", "", f"- A: {result.run_a}", f"- B: {result.run_b}", ""]
    out += [f"**Warning:** {warning}." for warning in result.warnings]
    out += ["", UNPAIRED, ""] if result.warnings else [UNPAIRED, ""]
    if not result.configurations:
        out.append("No configuration was measured in both runs.")
    else:
        out += ["| mode | pipeline | format | ordering | batch | intra/inter | run | examples/s (95% interval) | repeats "
                "| input cost the verdict read (95% interval) | verdict | B / A (95% interval) | B against A | notes |",
                "|" + "---|" * 14]
        for found in result.configurations:
            label, ratio = found.label, found.ratio_b_over_a
            versus = found.verdict if not ratio.decided else _text(ratio, ".2f", "×")
            for run, side in (("A", found.a), ("B", found.b)):
                notes = ["busy machine"] if side.busy_machine else []
                env = env_of({column: label[column] for column in ENV_COLUMNS})
                if run == "A" and env != "none set":
                    notes.append(f"env {env}")
                if run == "B" and found.matched_on == "labels":
                    notes.append("matched on labels (configuration ids differ)")
                out.append("| " + " | ".join([
                    label["mode"], label["pipeline"], label["format"] or "n/a", label["ordering"],
                    str(label["batch_size"]),
                    threads_of(label["intra_op_threads"], label["inter_op_threads"]).replace(" / ", "/"), run,
                    _text(side.examples_per_sec, ",.0f"), str(side.repeats),
                    _input_cost(side) if label["mode"] == "train" else "—",
                    (f"{side.verdict} for {side.trainer}" if side.verdict else "—")
                    if label["mode"] == "train" else "—",
                    versus if run == "B" else "", (f"{found.verdict} (over {found.basis})" if run == "B"
                                                  else ""), ", ".join(notes)]) + " |")
    out += ["", f"Only in A: {result.only_in_a} configuration(s); only in B: {result.only_in_b}."]
    return "\n".join(out) + "\n"


def compare_dirs(run_a: Path, run_b: Path) -> Comparison:
    """Give the comparison of two run folders (each read whole; UsageError if one is not a run folder)."""
    return compare(load(run_a), load(run_b))
