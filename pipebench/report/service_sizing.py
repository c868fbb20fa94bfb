"""How many tf.data service workers would feed the model: FastFlow's closed formula on one run's measurements.

Per pipeline (pipeline, format, ordering, batch size, threads), from input-mode configurations of one run:

- L, local throughput: the pipeline read in source mode `file`;
- R, one remote worker: the same pipeline in source mode `service` with `sources.service.workers: 1`;
- C, the compute ceiling: the synthetic arm (the train step on one batch served from memory) of the train
  trials at the same batch size and threads.

FastFlow (Um et al., PVLDB 16(5) 2023, §1.3 of the capacity anchors) starts `ceil((C − L)/R − 0.1)` remote
workers beside the local pipeline (0 when L already reaches C). pipebench's service mode sends every
example through the service, so the count with no local share, `ceil(C/R − 0.1)` and at least 1, is given too. Each count's
range is the formula at the corners of the three 95% intervals (best: C low, L and R high; worst: the
opposite), which is wider than a joint 95% interval. On one host the workers share the trainer's cores, so
R is what one worker gives there: on a machine of its own it gives at least as much.

The client-side ceiling is its own number: examples/s through the service × the bytes per example it
sends (TrialRecord.service_bytes_per_example, before compression), at the fastest service configuration.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from pipebench.measure.intervals import Interval
from pipebench.report.checklist_records import MORE_ROUNDS, Item
from pipebench.results import RunResults
from pipebench.results.configurations import Configuration, configurations
from pipebench.results.trial_row import TrialRow

FORMULA = "FastFlow's initial worker count ceil((C − L)/R − 0.1)"
_SAME = ("pipeline", "format", "ordering", "batch_size", "intra_op_threads", "inter_op_threads")
_SETTING = ("batch_size", "intra_op_threads", "inter_op_threads")


@dataclass(frozen=True)
class Count:
    """A worker count at the intervals' means, and at their best and worst corners (None: no interval)."""

    mean: int
    best: int | None
    worst: int | None

    def text(self) -> str:
        if self.best is None:
            return f"{self.mean} (no interval: a figure has fewer than two rounds)"
        return f"{self.mean} ({self.best}–{self.worst})"


@dataclass(frozen=True)
class Sizing:
    """One pipeline's service sizing, or why it cannot be had (`unavailable`)."""

    name: str
    local: Interval | None = None
    one_worker: Interval | None = None
    ceiling: Interval | None = None
    beside_local: Count | None = None
    all_remote: Count | None = None
    unavailable: str | None = None


def fastflow_workers(ceiling: float, local: float, one_worker: float) -> int:
    """Give FastFlow's initial remote worker count: ceil((C − L)/R − 0.1), at least 0."""
    return max(0, math.ceil((ceiling - local) / one_worker - 0.1))


def worker_count(ceiling: Interval, local: Interval | None, one_worker: Interval) -> Count:
    """Give the count at the means and at the corners (`local` None: no local share, so at least one worker)."""
    least = 0 if local else 1
    local = local or Interval(0.0, 0.0, 0.0, one_worker.n)

    def count(c: float, here: float, r: float) -> int:
        return max(least, fastflow_workers(c, here, r))
    mean = count(ceiling.mean, local.mean, one_worker.mean)
    if not (ceiling.decided and local.decided and one_worker.decided):
        return Count(mean, None, None)
    return Count(mean, count(ceiling.low, local.high, one_worker.high), count(ceiling.high, local.low, one_worker.low))


def _key(config: Configuration, columns: tuple[str, ...]) -> tuple:
    return tuple(getattr(config.rows[0], c) for c in columns)


def sizings(rows: list[TrialRow]) -> list[Sizing]:
    """Give the sizing of every pipeline measured through the service with one worker (one run's rows)."""
    found = configurations(rows)
    ceilings = {}
    for config in found:
        if config.mode == "train" and config.pooled.synthetic is not None:
            best = ceilings.get(_key(config, _SETTING))
            if best is None or config.pooled.synthetic.n > best.n:
                ceilings[_key(config, _SETTING)] = config.pooled.synthetic
    local = {_key(c, _SAME): c.throughput for c in found if c.mode == "input" and c.label["source_mode"] == "file"}
    out = []
    for config in found:
        if config.mode != "input" or config.label["source_mode"] != "service" or config.rows[0].service["workers"] != 1:
            continue
        row = config.rows[0]
        name = (f"{row.pipeline} ({row.format}, {row.ordering}, batch {row.batch_size}, "
                f"{row.service['sharding_policy']})")
        ceiling, here = ceilings.get(_key(config, _SETTING)), local.get(_key(config, _SAME))
        if ceiling is None:
            out.append(Sizing(name, here, config.throughput, unavailable="no train trial at this batch size and "
                                                                          "threads measured the compute ceiling"))
            continue
        out.append(Sizing(name, here, config.throughput, ceiling,
                          worker_count(ceiling, here, config.throughput) if here is not None else None,
                          worker_count(ceiling, None, config.throughput)))
    return out


def client_ceiling(rows: list[TrialRow]) -> tuple[Interval, str] | None:
    """Give (MB/s the client received through the service, naming the configuration) at the fastest such one."""
    best = None
    for config in configurations(rows):
        per_example = [r.service_bytes_per_example for r in config.rows if r.service_bytes_per_example]
        if config.mode != "input" or config.label["source_mode"] != "service" or not per_example:
            continue
        rate = config.throughput.scaled(sum(per_example) / len(per_example) / 1e6)
        if best is None or rate.mean > best[0].mean:
            service = config.rows[0].service
            best = (rate, f"{config.rows[0].pipeline} with {service['workers']} worker(s), "
                          f"{service['sharding_policy']}, split before {service['split_before']}")
    return best


def sizing_lines(rows: list[TrialRow]) -> list[str]:
    """Give the summary's lines on service sizing (none when the run measured nothing through the service)."""
    if not any(r.source_mode == "service" for r in rows):
        return []
    out = [f"Workers to feed the model by {FORMULA}, where C is the compute ceiling (synthetic arm), L the local "
           "pipeline and R one service worker, all examples/s with 95% intervals; counts at the means (best–worst "
           "corner of the intervals). On one host R shares the trainer's cores.", ""]
    found = sizings(rows)
    if not found:
        out.append("- unavailable: no input trial through the service with `sources.service.workers: 1` (R).")
    for s in found:
        if s.unavailable:
            out.append(f"- {s.name}: unavailable: {s.unavailable}; R {s.one_worker.text()} ex/s.")
            continue
        beside = (f"{s.beside_local.text()} beside the local pipeline (L {s.local.text()} ex/s)" if s.beside_local
                  else "unavailable beside the local pipeline: no file-mode input trial of it (L)")
        out.append(f"- {s.name}: C {s.ceiling.text()} ex/s, R {s.one_worker.text()} ex/s → {beside}; "
                   f"{s.all_remote.text()} with everything through the service.")
    ceiling = client_ceiling(rows)
    out += ["", f"Client-side service ceiling: {ceiling[0].text('.1f', unit=' MB/s')} received (uncompressed "
                f"elements) at the fastest service configuration ({ceiling[1]}); more workers cannot feed the "
                "model faster than the client takes it in." if ceiling else
            "Client-side service ceiling: unavailable: no service trial recorded its bytes per example.", ""]
    return out


def service_workers(runs: list[RunResults]) -> Item:
    """Give the service sizing (the checklist's `service` entry, apart from the rules: it applies only to runs
    that measured the service): how many tf.data service workers would feed the model, by FastFlow's formula."""
    title = "Service workers to feed the model"
    found, ceilings = [], []
    for run in runs:
        rows = run.rows
        found += sizings(rows)
        ceiling = client_ceiling(rows)
        if ceiling:
            ceilings.append({"mb_per_sec": ceiling[0], "at": ceiling[1]})
    usable = [s for s in found if not s.unavailable]
    if not usable:
        why = found[0].unavailable if found else "no input trial through the service with one worker"
        return Item("service_workers", title, "N/A", {"client_ceiling": ceilings}, f"unavailable: {why}.")
    evidence = {"formula": FORMULA, "client_ceiling": ceilings, "pipelines": [
        {"pipeline": s.name, "ceiling": s.ceiling.text(), "one_worker": s.one_worker.text(),
         "local": s.local.text() if s.local else None,
         "beside_local": s.beside_local.text() if s.beside_local else None, "all_remote": s.all_remote.text()}
        for s in usable]}
    with_local = [s for s in usable if s.beside_local]
    if not with_local:
        return Item("service_workers", title, "N/A", evidence,
                     "unavailable: no file-mode trial measured the local pipeline (L), so the workers needed beside it "
                     "are not known; the counts with everything through the service are in the evidence.")
    needed = [s for s in with_local if s.beside_local.mean > 0]
    if not needed:
        undecided = [s for s in with_local if s.beside_local.worst is None or s.beside_local.worst > 0]
        if undecided:
            top = undecided[0]
            return Item("service_workers", title, "WARN", evidence,
                         f"Inconclusive: {top.name} needs {top.beside_local.text()} service workers beside the local "
                         f"pipeline (best–worst over the 95% intervals): {MORE_ROUNDS}.")
        return Item("service_workers", title, "PASS", evidence,
                     "The local pipeline reaches the compute ceiling even at the worst corner of the 95% intervals: "
                     "no service workers needed.")
    top = max(needed, key=lambda s: s.beside_local.mean)
    return Item("service_workers", title, "WARN", evidence,
                 f"{top.name}: {top.beside_local.text()} service workers beside the local pipeline would feed the "
                 "model (best–worst over the 95% intervals); check the client-side ceiling before adding more.")
