"""`summary.md` of a run: best trials, the input-bound verdict per pipeline, failures, warnings."""
from __future__ import annotations

from pipebench.atomic import atomic_write_bytes
from pipebench.datasets import DataFacts
from pipebench.measure.facts import MachineFacts
from pipebench.measure.trial import TRIAL_MODES
from pipebench.results import SUMMARY_FILE
from pipebench.results.run_folder import RunFolder


def _table(header: list[str], lines: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(line) + " |" for line in lines]
    return "\n".join(out)


def _threads(row: dict) -> str:
    return f"{row['intra_op_threads'] or 'default'}/{row['inter_op_threads'] or 'default'}"


def best_table(rows: list[dict], per_mode: int = 3) -> str:
    """Give the fastest ok trials of each mode as a Markdown table (with a run column when rows come from several runs)."""
    several_runs = len({r["run_id"] for r in rows}) > 1
    lines = []
    for mode in TRIAL_MODES:
        ok = sorted((r for r in rows if r["mode"] == mode and r["status"] == "ok"),
                    key=lambda r: -r["examples_per_sec_median"])
        for r in ok[:per_mode]:
            flags = [] if r.get("stable", True) else ["unstable"]
            if r.get("warmup_steady") is False:
                flags.append("never steady")
            if r.get("breaks_semantics"):
                flags.append(f"breaks semantics: {r['semantics']}")
            lines.append(([r["run_id"]] if several_runs else [])
                         + [mode, r["pipeline"], r["format"] or "n/a", r["ordering"], str(r["batch_size"]), _threads(r),
                            f"{r['examples_per_sec_median']:,.0f}", f"{r['examples_per_sec_cv_pct']:.1f}%",
                            ", ".join(flags)])
    return _table((["run"] if several_runs else [])
                  + ["mode", "pipeline", "format", "ordering", "batch", "intra/inter", "examples/s", "CV", "notes"],
                  lines)


def verdicts(rows: list[dict]) -> list[str]:
    """Give one sentence per train trial: its input fraction against its own run's synthetic ceiling."""
    ceilings = {(r["run_id"], r["config_key"]): r["examples_per_sec_median"] for r in rows
                if r["mode"] == "synthetic" and r["status"] == "ok"}
    several_runs = len({r["run_id"] for r in rows}) > 1
    out = []
    for r in rows:
        if r["mode"] != "train" or r["status"] != "ok" or r.get("input_fraction") is None:
            continue
        ceiling = ceilings.get((r["run_id"], r["config_key"]))
        if ceiling is None:
            continue
        beat = r["examples_per_sec_median"] / ceiling - 1
        caveat = (f" (train beat the synthetic ceiling by {100 * beat:.0f}%: the ceiling was measured low, "
                  "the machine was busy or noisy; rerun before trusting this line)") if beat > 0.05 else ""
        run = f"run {r['run_id']}: " if several_runs else ""
        out.append(f"- {run}**{r['pipeline']}** ({r['format']}, {r['ordering']}, batch {r['batch_size']}, threads "
                   f"{_threads(r)}): train {r['examples_per_sec_median']:,.0f} ex/s vs synthetic "
                   f"{ceiling:,.0f} ex/s → {100 * r['input_fraction']:.0f}% of step time "
                   f"waiting for input: **{r['input_bound']}**{caveat}")
    return out


def header_lines(machine: MachineFacts, data: DataFacts) -> list[str]:
    """Give the lines a summary opens with: the machine, the OpenMP statement, the data."""
    rows = f"{data.rows:,} rows ({data.rows_from})" if data.rows is not None else f"rows {data.rows_from}"
    auc = f", oracle AUC {data.oracle_auc:.3f}" if data.oracle_auc is not None else ""
    return [f"Machine: {machine.headline()}.", "", f"OpenMP: {machine.tensorflow.openmp.statement}.", "",
            f"Data: {data.source}, {rows}, formats {', '.join(data.formats)}, fingerprint {data.fingerprint}{auc}.",
            ""]


def write_summary(run: RunFolder, rows: list[dict], stopped: str | None) -> str:
    """Write summary.md into the run folder; give its text."""
    failed = [r for r in rows if r["status"] != "ok"]
    parts = [f"# Run {run.run_id}", ""]
    if stopped:
        parts += [f"**Stopped early:** {stopped}.", ""]
    parts += header_lines(run.machine, run.data)
    parts += [f"{len(rows)} trials ({len(rows) - len(failed)} ok, {len(failed)} not).", ""]
    parts += ["## Best trials", "", best_table(rows), ""]
    found = verdicts(rows)
    parts += ["## Is the input pipeline the bottleneck?", "",
              "Share of train-step time spent waiting for input = 1 − train / synthetic throughput "
              "(TF Profiler thresholds: < 5% not, 5–20% moderately, > 20% highly input-bound).", ""]
    parts += found or ["No train trial with a synthetic ceiling of the same batch size and threads."]
    parts.append("")
    if failed:
        parts += ["## Trials that did not finish", "",
                  _table(["mode", "pipeline", "format", "status", "reason"],
                         [[r["mode"], r["pipeline"], r["format"] or "", r["status"], (r["reason"] or "")[:160]]
                          for r in failed]), ""]
    text = "\n".join(parts)
    atomic_write_bytes(run.path / SUMMARY_FILE, text.encode())
    return text
