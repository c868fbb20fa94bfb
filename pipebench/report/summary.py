"""`summary.md` of a run: the machine, the best configurations ranked with intervals, the input-bound
verdicts from paired rounds, what a busy machine did, and the trials that did not finish."""
from __future__ import annotations

from pipebench.atomic import atomic_write_bytes
from pipebench.datasets import DataFacts
from pipebench.measure.facts import MachineFacts
from pipebench.measure.intervals import Interval
from pipebench.measure.trial import TRIAL_MODES
from pipebench.report.configurations import configurations, ranked
from pipebench.report.service_sizing import sizing_lines
from pipebench.report.winner import winner_lines
from pipebench.results import SUMMARY_FILE
from pipebench.results.run_folder import RunFolder

#: How the two input measures are named and explained wherever a verdict is shown.
MEASURES = ("Two measures of what input costs, both from paired rounds (the train step and its synthetic ceiling "
            "— the same step on one batch served from memory — timed in alternation in one worker): "
            "**waiting** is the TF Profiler's input time, the share of train-step time spent blocked fetching the "
            "next batch; the verdict reads it (< 5% not, 5–20% moderately, > 20% highly input-bound, and "
            "inconclusive while its 95% interval straddles a threshold). **Slowdown** is 1 − train / synthetic "
            "throughput (DS-Analyzer's prep stall): on CPU it also holds the pipeline competing with the model for "
            "cores, so it can be large while waiting is small.")


def _table(header: list[str], lines: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(line) + " |" for line in lines]
    return "\n".join(out)


def _threads(row: dict) -> str:
    return f"{row['intra_op_threads'] or 'default'}/{row['inter_op_threads'] or 'default'}"


def _pct(interval: Interval | None) -> str:
    return "not measured" if interval is None else interval.text(".1f", 100.0, "%")


def _rate(interval: Interval) -> str:
    return interval.text(",.0f")


def best_table(rows: list[dict], per_mode: int = 5) -> str:
    """Give each mode's fastest configurations, ranked by paired comparison with the fastest, as Markdown."""
    found = configurations(rows)
    several_runs = len({c.run_id for c in found}) > 1
    lines = []
    for mode in TRIAL_MODES:
        for config, ratio, verdict in ranked([c for c in found if c.mode == mode])[:per_mode]:
            row = config.rows[0]
            notes = []
            if config.busy:
                notes.append("busy machine")
            if row.get("breaks_semantics"):
                notes.append(f"breaks semantics: {row['semantics']}")
            versus = verdict if ratio is None or not ratio.decided else f"{ratio.text('.2f', unit='×')}: {verdict}"
            lines.append(([config.run_id] if several_runs else [])
                         + [mode, row["pipeline"] + (f" @{row['source_mode']}" if row.get("source_mode") not in
                                                     (None, "file") else ""),
                            row["format"] or "n/a", row["ordering"], str(row["batch_size"]),
                            _threads(row), _rate(config.throughput), str(config.repeats), versus, ", ".join(notes)])
    return _table((["run"] if several_runs else [])
                  + ["mode", "pipeline", "format", "ordering", "batch", "intra/inter", "examples/s (95% interval)",
                     "repeats", "against the fastest", "notes"], lines)


def verdicts(rows: list[dict]) -> list[str]:
    """Give one sentence per train configuration: waiting share and verdict, slowdown, both rates, all with intervals."""
    found = [c for c in configurations(rows) if c.mode == "train" and c.pooled.waiting is not None]
    several_runs = len({c.run_id for c in found}) > 1
    out = []
    for config in sorted(found, key=lambda c: (c.run_id, c.rows[0]["pipeline"], c.rows[0]["format"] or "")):
        row, pooled = config.rows[0], config.pooled
        verdict = config.verdict
        if verdict == "inconclusive":
            busy = f"; {pooled.verdict} on a busy machine" if config.busy and pooled.verdict != "inconclusive" else ""
            verdict = f"inconclusive ({_pct(pooled.waiting)}{busy})"
        rounds = sum(r.get("rounds") or 0 for r in config.rows)
        capped = any(r.get("rounds_cap_hit") for r in config.rows)
        notes = [f"{rounds} rounds in {config.repeats} process{'es' if config.repeats > 1 else ''}"]
        if capped:
            notes.append("the round cap (measurement.max_windows) was hit undecided: add repeats to decide")
        if config.busy:
            notes.append("measured while other processes used the machine")
        run = f"run {config.run_id}: " if several_runs else ""
        out.append(f"- {run}**{row['pipeline']}** ({row['format']}, {row['ordering']}, batch {row['batch_size']}, "
                   f"threads {_threads(row)}): waiting for input {_pct(pooled.waiting)} of step time → "
                   f"**{verdict}**; slowdown against the synthetic ceiling {_pct(pooled.slowdown)} (train "
                   f"{_rate(pooled.throughput)} ex/s, synthetic {_rate(pooled.synthetic)} ex/s); {'; '.join(notes)}")
    return out


def busy_lines(rows: list[dict], threshold_pct: float, not_remeasured_why: str | None = None) -> list[str]:
    """Give what the run says about trials measured while other processes used the machine, and what it
    did (`not_remeasured_why`: why the run stopped measuring them again)."""
    flagged = [r for r in rows if r["status"] == "ok" and r.get("busy_machine") and not r.get("remeasure_of")]
    if not flagged:
        return []
    again = {r["remeasure_of"]: r for r in rows if r.get("remeasure_of")}
    quiet = [r for r in flagged if r["trial_id"] in again and not again[r["trial_id"]].get("busy_machine")]
    still = [r for r in flagged if r["trial_id"] in again and again[r["trial_id"]].get("busy_machine")]
    left = [r for r in flagged if r["trial_id"] not in again]
    return [f"**Busy machine:** {len(flagged)} of {len(rows)} trials ran while other processes used more than "
            f"{threshold_pct:g}% of a vCPU during their windows. Measured again at the end of the run: "
            f"{len(quiet) + len(still)} ({len(quiet)} quiet the second time, whose figures replace the first; "
            f"{len(still)} busy again, left flagged); not measured again: {len(left)} (left flagged"
            f"{': ' + not_remeasured_why if not_remeasured_why and left else ''}). Figures "
            "marked 'busy machine' may be low and their verdicts may not hold on a quiet machine.", ""]


def header_lines(machine: MachineFacts, data: DataFacts) -> list[str]:
    """Give the lines a summary opens with: the machine, the OpenMP statement, the data."""
    rows = f"{data.rows:,} rows ({data.rows_from})" if data.rows is not None else f"rows {data.rows_from}"
    auc = f", oracle AUC {data.oracle_auc:.3f}" if data.oracle_auc is not None else ""
    return [f"Machine: {machine.headline()}.", "", f"OpenMP: {machine.tensorflow.openmp.statement}.", "",
            f"Data: {data.source}, {rows}, formats {', '.join(data.formats)}, fingerprint {data.fingerprint}{auc}.",
            ""]


def winner_section(run: RunFolder) -> list[str]:
    """Give the search's confirmed winner (or why none) from the study's importances.json; nothing for a grid."""
    from pipebench.results.run_folder import read_study

    study = read_study(run.path)
    lines = winner_lines(study) if study else []
    return ["## Winner of the search", "", *lines, ""] if lines else []


def write_summary(run: RunFolder, rows: list[dict], stopped: str | None, busy_threshold_pct: float,
                  not_remeasured_why: str | None = None) -> str:
    """Write summary.md into the run folder; give its text."""
    failed = [r for r in rows if r["status"] != "ok"]
    parts = [f"# Run {run.run_id}", ""]
    if stopped:
        parts += [f"**Stopped early:** {stopped}.", ""]
    parts += header_lines(run.machine, run.data)
    parts += [f"{len(rows)} trials ({len(rows) - len(failed)} ok, {len(failed)} not).", ""]
    parts += busy_lines(rows, busy_threshold_pct, not_remeasured_why)
    parts += winner_section(run)
    parts += ["## Best configurations", "",
              "Ranked by mean throughput; each compared with the fastest by their paired ratio over the rounds "
              "both ran in (95% interval; a ratio whose interval holds 1 is no measurable difference).", "",
              best_table(rows), ""]
    found = verdicts(rows)
    parts += ["## Is the input pipeline the bottleneck?", "", MEASURES, ""]
    parts += found or ["No train trial finished."]
    parts.append("")
    sizing = sizing_lines(rows)
    if sizing:
        parts += ["## How many tf.data service workers would feed the model?", "", *sizing]
    if failed:
        parts += ["## Trials that did not finish", "",
                  _table(["mode", "pipeline", "format", "status", "reason"],
                         [[r["mode"], r["pipeline"], r["format"] or "", r["status"], (r["reason"] or "")[:160]]
                          for r in failed]), ""]
    text = "\n".join(parts)
    atomic_write_bytes(run.path / SUMMARY_FILE, text.encode())
    return text
