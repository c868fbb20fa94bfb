"""The input-bound verdict in words: which figure it read, for which trainer, and what it means there.

One producer for the sentences summary.md, the report, the checklist, compare, the notebooks and the
run's log say about a train configuration (pipebench.measure.figures chooses the figure).
"""
from __future__ import annotations

from pipebench.measure.figures import SLOWDOWN, WAITING, Figures
from pipebench.measure.intervals import INPUT_BOUND_LOW, Interval
from pipebench.report.tables import batch_text
from pipebench.results.configurations import Configuration, configurations
from pipebench.results.trial_row import TrialRow

#: How the two input measures are named and explained wherever a verdict is shown.
MEASURES = ("Two measures of what input costs, both from paired rounds (the train step and its synthetic ceiling "
            "— the same step on one batch served from memory — timed in alternation in one worker): the "
            "**slowdown** is 1 − train / synthetic throughput (DS-Analyzer's prep stall), what input costs training "
            "speed in all; **waiting** is the TF Profiler's input time, the share of train-step time spent blocked "
            "fetching the next batch. The verdict (< 5% not, 5–20% moderately, > 20% highly input-bound, "
            "inconclusive while the 95% interval straddles a threshold) reads the one that fits where the model "
            "trains: the slowdown for a model training on the same CPUs as its pipeline, which slows the step by "
            "taking cores even when the step never waits; the waiting share for a model on an accelerator fed by "
            "the host, which idles only while it waits (`measurement.trainer`, `run --trainer`: by default where "
            "the train step ran here).")
#: The trainer each basis speaks for.
TRAINER = {SLOWDOWN: "a CPU trainer", WAITING: "an accelerator trainer"}
#: The figure each basis reads, as a sentence names it.
FIGURE = {SLOWDOWN: "slowdown", WAITING: "waiting share"}


def pct(interval: Interval | None) -> str:
    """Give a share with its interval in percent ('not measured' for none)."""
    return "not measured" if interval is None else interval.text(".1f", 100.0, "%")


def trainer_text(config: Configuration) -> str:
    """Give the trainer the verdict assumed and why: the setting, or where the step ran."""
    row = config.rows[0]
    if row.input_bound_basis is None:
        return ("an accelerator trainer (assumed: runs made before the verdict followed the trainer read the waiting "
                "share for every trainer)")
    if config.trainer in ("cpu", "accelerator"):
        why = f"measurement.trainer: {config.trainer}"
    else:
        device = row.train_device
        why = f"its train step ran on {'the CPUs' if device in (None, 'CPU') else 'a ' + device}"
    return f"{TRAINER[config.basis]} ({why})"


def meaning(pooled: Figures) -> str:
    """Give what the verdict's figures mean for its trainer, e.g. 'input costs 41.0% (33.2–47.6%) of training
    speed here: the pipeline competes with the model for the CPUs; the step itself barely waits (2.1% (…))'."""
    slowdown, waiting = pooled.slowdown, pooled.waiting
    waits = f"the step waits for input {pct(waiting)} of its time"
    if pooled.basis == WAITING:
        if slowdown is None:
            return waits
        return (f"{waits}; beside the same step on batches from memory it trains {pct(slowdown)} slower here, where "
                "the pipeline also shares the host's CPUs")
    if slowdown is None:
        return waits
    if not (slowdown.decided and slowdown.low > 0.0):
        return f"input costs no measurable training speed here ({pct(slowdown)}); {waits}"
    cost = f"input costs {pct(slowdown)} of training speed here"
    if slowdown.low > INPUT_BOUND_LOW and waiting is not None and waiting.decided and waiting.high < INPUT_BOUND_LOW:
        return (f"{cost}: the pipeline competes with the model for the CPUs; the step itself barely waits "
                f"({pct(waiting)})")
    return f"{cost}; {waits}"


def label(config: Configuration) -> str | None:
    """Give the verdict as shown: the label, or 'inconclusive (its figure's interval[; label on a busy machine])'."""
    verdict, pooled = config.verdict, config.pooled
    if verdict != "inconclusive":
        return verdict
    busy = f"; {pooled.verdict} on a busy machine" if config.busy and pooled.verdict != "inconclusive" else ""
    return f"inconclusive ({FIGURE[pooled.basis]} {pct(pooled.input_cost)}{busy})"


def verdicts(rows: list[TrialRow]) -> list[str]:
    """Give one sentence per train configuration: the verdict for its trainer, what it means, both rates, with
    intervals."""
    found = [c for c in configurations(rows) if c.mode == "train" and c.pooled.verdict is not None]
    several_runs = len({c.run_id for c in found}) > 1
    out = []
    for config in sorted(found, key=lambda c: (c.run_id, c.rows[0].pipeline, c.rows[0].format or "")):
        row, pooled = config.rows[0], config.pooled
        rounds = sum(r.rounds or 0 for r in config.rows)
        notes = [f"{rounds} rounds in {config.repeats} process{'es' if config.repeats > 1 else ''}"]
        if any(r.rounds_cap_hit for r in config.rows):
            notes.append("the round cap (measurement.max_windows) was hit undecided: add repeats to decide")
        if config.busy:
            notes.append("measured while other processes used the machine")
        run = f"run {config.run_id}: " if several_runs else ""
        out.append(f"- {run}**{row.pipeline}** ({row.format}, {row.ordering}, batch {batch_text(row)}, "
                   f"threads {config.threads}): **{label(config)}** for {trainer_text(config)}: {meaning(pooled)}. "
                   f"Train {config.throughput.text(',.0f')} ex/s, synthetic ceiling "
                   f"{pooled.synthetic.text(',.0f') if pooled.synthetic else 'not measured'} ex/s; {'; '.join(notes)}")
    return out
