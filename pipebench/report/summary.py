"""`summary.md` of a run: what to use and its measured gain (report.action), the machine, the best
configurations ranked with intervals, the input-bound verdicts from paired rounds (report.verdicts), what a
busy machine did, and the trials that did not finish."""
from __future__ import annotations

from pipebench.atomic import atomic_write_bytes
from pipebench.config.choices import TRIAL_MODES
from pipebench.datasets import DataFacts
from pipebench.measure.facts import MachineFacts
from pipebench.report.action import Baseline, action
from pipebench.report.service_sizing import sizing_lines
from pipebench.report.tables import batch_text
from pipebench.report.verdicts import MEASURES, verdicts
from pipebench.report.winner import winner_lines
from pipebench.results import SUMMARY_FILE
from pipebench.results.configurations import configurations, ranked
from pipebench.results.run_folder import RunFolder
from pipebench.results.trial_row import TrialRow


def _table(header: list[str], lines: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(line) + " |" for line in lines]
    return "\n".join(out)


def best_table(rows: list[TrialRow], per_mode: int = 5) -> str:
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
            if row.breaks_semantics:
                notes.append(f"breaks semantics: {row.semantics}")
            versus = verdict if ratio is None or not ratio.decided else f"{ratio.text('.2f', unit='×')}: {verdict}"
            lines.append(([config.run_id] if several_runs else [])
                         + [mode, row.pipeline + (f" @{row.source_mode}" if row.source_mode not in
                                                     (None, "file") else ""),
                            row.format or "n/a", row.ordering, batch_text(row),
                            config.threads, config.throughput.text(",.0f"), str(config.repeats), versus,
                            ", ".join(notes)])
    return _table((["run"] if several_runs else [])
                  + ["mode", "pipeline", "format", "ordering", "batch", "intra/inter", "examples/s (95% interval)",
                     "repeats", "against the fastest", "notes"], lines)


def busy_lines(rows: list[TrialRow], threshold_pct: float, not_remeasured_why: str | None = None) -> list[str]:
    """Give what the run says about trials measured while other processes used the machine, and what it
    did (`not_remeasured_why`: why the run stopped measuring them again)."""
    flagged = [r for r in rows if r.ok and r.busy_machine and not r.remeasure_of]
    if not flagged:
        return []
    again = {r.remeasure_of: r for r in rows if r.remeasure_of}
    quiet = [r for r in flagged if r.trial_id in again and not again[r.trial_id].busy_machine]
    still = [r for r in flagged if r.trial_id in again and again[r.trial_id].busy_machine]
    left = [r for r in flagged if r.trial_id not in again]
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
    from pipebench.results.study import read_study

    study = read_study(run.path)
    lines = winner_lines(study) if study else []
    return ["## Winner of the search", "", *lines, ""] if lines else []


#: How the best table is ranked, said above it in summary.md and the report.
RANKING = ("Ranked by paired comparison over the rounds the configurations share (a round's value: the trial's "
           "geometric mean over its windows; the same rule as a search's confirmation race); each compared with the "
           "fastest by their paired ratio over those rounds (95% interval; a ratio whose interval holds 1 is no "
           "measurable difference).")


def write_summary(run: RunFolder, rows: list[TrialRow], stopped: str | None, busy_threshold_pct: float,
                  not_remeasured_why: str | None = None, baseline: Baseline | None = None) -> str:
    """Write summary.md into the run folder, opening with the action against `baseline` (report.action); give its
    text."""
    failed = [r for r in rows if not r.ok]
    parts = [f"# Run {run.run_id}", "", f"**{action(rows, baseline, run.path)}**", ""]
    if stopped:
        parts += [f"**Stopped early:** {stopped}.", ""]
    parts += header_lines(run.machine, run.data)
    parts += [f"{len(rows)} trials ({len(rows) - len(failed)} ok, {len(failed)} not).", ""]
    parts += busy_lines(rows, busy_threshold_pct, not_remeasured_why)
    parts += winner_section(run)
    parts += ["## Best configurations", "", RANKING, "", best_table(rows), ""]
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
                         [[r.mode, r.pipeline, r.format or "", r.status, (r.reason or "")[:160]]
                          for r in failed]), ""]
    text = "\n".join(parts)
    atomic_write_bytes(run.path / SUMMARY_FILE, text.encode())
    return text
