"""`pipebench report`: one self-contained HTML page (figures inlined as base64) and its Markdown twin.

Both are rendered from one list of blocks, so they always say the same thing; the Markdown links the
PNGs written beside it under figures/.
"""
from __future__ import annotations

import base64
import html
import math
from pathlib import Path

import pandas as pd

from pipebench.atomic import atomic_dir
from pipebench.capacity.model import MODEL_SUMMARY, TRANSFER_ASSUMPTION, rates_per_core, stage_costs
from pipebench.errors import PipebenchError, UsageError
from pipebench.measure.intervals import Interval
from pipebench.report.action import action, baseline_of
from pipebench.report.figures import Figure, render
from pipebench.report.projections import error_text, model_errors, profiled
from pipebench.report.summary import RANKING, best_table, busy_lines
from pipebench.report.tables import batch_text, env_text, gains, threads_text, ties
from pipebench.report.verdicts import MEASURES, verdicts
from pipebench.results.configurations import fastest
from pipebench.results import RunResults, load_many
from pipebench.results.configurations import Configuration, configurations

HTML_FILE, MARKDOWN_FILE, FIGURES_DIR = "report.html", "report.md", "figures"
_STYLE = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
          "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}"
          "pre{background:#f6f6f6;padding:1em;overflow:auto;font-size:12px}img{max-width:100%;display:block}"
          ".card{border:2px solid #4a7;border-radius:8px;padding:0 1em;margin:1em 0}")


def _machine_rows(run: RunResults) -> list[list[str]]:
    m = run.machine
    tf = m.tensorflow
    return [[run.run_dir.name, m.cpu.model or "unknown model", f"{m.cpu.vcpus} / {m.cpu.physical_cores}",
             f"{m.memory_bytes / 2**30:.1f} GiB" if m.memory_bytes else "unknown",
             tf.version if tf.importable else f"unavailable ({tf.error})", tf.openmp.statement, str(m.gpu.count),
             (f"{m.sagemaker.instance_type} ({m.sagemaker.instance_type_source})" if m.sagemaker.instance_type
              else "not recorded"), m.host_fingerprint]]


def _basis(config: Configuration) -> str:
    """Give what a configuration's throughput interval is taken over."""
    if config.repeats > 1:
        return f"{config.repeats} repeats (fresh processes spread across the run): t interval over their means"
    return ("1 repeat: t interval over the windows of one process, narrower than the noise between processes "
            "(add measurement.repeats to widen it honestly)")


def _card(found: list[Configuration]) -> list[tuple]:
    best = fastest(found)
    if best is None:
        return [("p", "No finished train or input configuration: no best configuration.")]
    row = best.rows[0]
    settings = [["mode", best.mode], ["pipeline", row.pipeline], ["format", str(row.format)],
                ["source mode", str(row.source_mode)], ["ordering", row.ordering],
                ["batch size", batch_text(row)], ["intra / inter-op threads", threads_text(row)],
                ["environment", env_text(row)], ["examples/sec (95% interval)", best.throughput.text(",.0f")],
                ["repeats", _basis(best)]]
    if len({c.run_id for c in found}) > 1:
        settings.insert(0, ["run", best.run_id])
    if best.busy:
        settings.append(["busy machine", "other processes used the CPU during its windows and it was not measured "
                                         "again quietly: its throughput may be low"])
    blocks: list[tuple] = [("p", f"The fastest {best.mode}-mode configuration by paired comparison over the rounds it "
                                 "shares with the others, its repeats pooled (never a single trial)."),
                           ("table", ["setting", "value"], settings)]
    tied = ties(found, best)
    if tied:
        blocks.append(("p", f"No measurable difference from {len(tied)} other configuration(s) (their paired ratio "
                            "with it holds 1): " + "; ".join(
                                f"{c.rows[0].pipeline} · {c.rows[0].format} · {c.rows[0].ordering} · "
                                f"batch {batch_text(c.rows[0])} · threads {threads_text(c.rows[0])}" for c in tied)
                            + ". On this evidence any of them is as good."))
    lines = [[g.against, "not measured" if g.reference is None else g.reference.throughput.text(",.0f"),
              "—" if g.reference is None or g.reference is best else g.text(),
              g.verdict if g.reference is not None else "not measured in this run"]
             for g in gains(found, best)]
    blocks.append(("table", ["compared with (same run, same mode)", "its examples/sec (95% interval)",
                             "best / it (paired, 95% interval)", "verdict"], lines))
    try:
        from pipebench.pipeline.export import export_pipeline

        code = export_pipeline(row.pipeline_spec)
        blocks.append(("code", code))
    except (PipebenchError, KeyError, TypeError, ValueError) as error:
        blocks.append(("p", f"Pipeline code not exported: {error}"))
    return [("card", blocks)]


def _capacity_blocks(runs: list[RunResults]) -> list[tuple]:
    """Give the per-stage cost model's section (stage costs, predicted vs measured), or nothing without capacity.json."""
    found = profiled(runs)
    if not found:
        return []
    blocks: list[tuple] = [
        ("h", "Per-stage CPU cost model"),
        ("p", f"Each stage's own CPU-seconds per example (its prefix's less the previous prefix's, measured in fresh "
              f"workers pinned to a few CPUs), and what they predict: {MODEL_SUMMARY} Assumption: "
              f"{TRANSFER_ASSUMPTION}.")]
    for item in found:
        profile = item.profile
        lines = [[s.stage, "yes" + (f" ({s.why_sequential})" if s.why_sequential else "") if s.sequential else "no",
                  cost.text(",.2f", 1e6), _rate_text(rate), s.prefix_examples_per_sec.text(",.0f")]
                 for s, cost, rate in zip(profile.stages, stage_costs(profile), rates_per_core(profile))]
        blocks += [("p", f"{profile.pipeline} (configuration {profile.configuration_id}, batch {profile.batch_size}), "
                         f"profiled on {profile.cores} pinned CPU(s) of host {profile.host_fingerprint} "
                         f"({item.run.run_dir.name})."),
                   ("table", ["stage", "sequential", "CPU µs per example (95% interval)",
                              "examples per CPU-second (95% interval)",
                              "its prefix alone, examples/s (95% interval)"], lines)]
    errors = model_errors(runs)
    if errors:
        blocks += [("p", "Predicted for each measured machine's vCPUs, beside what it measured (error = predicted / "
                         "measured − 1, bounds from both intervals; the profiled run's own error is in-sample)."),
                   ("table", ["machine", "vCPUs", "mode", "predicted examples/s", "measured examples/s", "error"],
                    [[(e.instance_type or e.host_fingerprint) + (" (profiled here)" if e.profiled_here else ""),
                      str(e.vcpus), e.mode, e.predicted.text(), e.measured.text(), error_text(e)] for e in errors])]
    return blocks


def _rate_text(rate: Interval | None) -> str:
    if rate is None:
        return "— (no measurable cost)"
    if rate.decided and math.isinf(rate.high):
        return f"{rate.mean:,.0f} (at least {rate.low:,.0f}: its cost's interval reaches 0)"
    return rate.text(",.0f")


def build_blocks(runs: list[RunResults], figures: list[Figure]) -> list[tuple]:
    """Give the report as blocks: ('h', text), ('p', text), ('table', header, rows), ('code', text),
    ('figure', Figure), ('card', blocks)."""
    rows = [row for run in runs for row in run.rows]
    found = configurations(rows)
    ok = sum(row.ok for row in rows)
    busy_threshold = runs[0].config["measurement"]["busy_other_cpu_pct"]
    blocks: list[tuple] = [
        ("h1", "pipebench report"),
        ("p", action(rows, baseline_of(runs[0].config), runs[0].run_dir if len(runs) == 1 else None)),
        ("p", f"{len(runs)} run(s): {', '.join(r.run_dir.name for r in runs)}; {len(rows)} trials, {ok} ok, "
              f"{len(found)} configurations."),
        *[("p", line.replace("**", "")) for line in busy_lines(rows, busy_threshold) if line],
        ("h", "Best configuration"), *_card(found),
        ("h", "Best configurations per mode"),
        ("p", RANKING),
        ("md", best_table(rows)),
        ("h", "Is the input pipeline the bottleneck?"), ("p", MEASURES.replace("**", "")),
        *[("p", line.removeprefix("- ").replace("**", "")) for line in verdicts(rows)],
        *_capacity_blocks(runs),
        ("h", "Figures"), *[("figure", f) for f in figures],
        ("h", "Machine facts"),
        ("table", ["run", "CPU", "vCPUs / physical cores", "memory", "TensorFlow", "OpenMP", "GPUs", "instance type",
                   "host fingerprint"], [row for r in runs for row in _machine_rows(r)]),
    ]
    return blocks


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    cell = lambda v: str(v).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    return "\n".join(["| " + " | ".join(map(cell, header)) + " |", "|" + "---|" * len(header)]
                     + ["| " + " | ".join(map(cell, row)) + " |" for row in rows])


def to_markdown(blocks: list[tuple]) -> str:
    """Give the blocks as Markdown; figures link to figures/<id>.png."""
    out = []
    for kind, *rest in blocks:
        if kind in ("h1", "h"):
            out.append(("# " if kind == "h1" else "## ") + rest[0])
        elif kind in ("p", "md"):
            out.append(rest[0])
        elif kind == "table":
            out.append(_md_table(*rest))
        elif kind == "code":
            out.append("```python\n" + rest[0].rstrip() + "\n```")
        elif kind == "figure":
            out.append(f"### {rest[0].title}\n\n![{rest[0].title}]({FIGURES_DIR}/{rest[0].id}.png)")
        elif kind == "card":
            out.append(to_markdown(rest[0]).rstrip())
    return "\n\n".join(out) + "\n"


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _md_to_table(text: str) -> str:
    lines = [line.strip().strip("|").split(" | ") for line in text.splitlines() if not line.startswith("|---")]
    return _html_table(lines[0], lines[1:])


def to_html(blocks: list[tuple]) -> str:
    """Give the blocks as one HTML page with every figure inlined (works offline)."""
    parts = []
    for kind, *rest in blocks:
        if kind == "h1":
            parts.append(f"<h1>{html.escape(rest[0])}</h1>")
        elif kind == "h":
            parts.append(f"<h2>{html.escape(rest[0])}</h2>")
        elif kind == "p":
            parts.append(f"<p>{html.escape(rest[0])}</p>")
        elif kind == "md":
            parts.append(_md_to_table(rest[0]))
        elif kind == "table":
            parts.append(_html_table(*rest))
        elif kind == "code":
            # Folded, so the figures stay on the first screen; one click shows the whole input_fn.
            parts.append(f"<details><summary>Exported pipeline code (input_fn)</summary>"
                         f"<pre><code>{html.escape(rest[0])}</code></pre></details>")
        elif kind == "figure":
            figure = rest[0]
            data = base64.b64encode(figure.png).decode()
            parts.append(f'<figure id="fig-{figure.id}"><figcaption>{html.escape(figure.title)}</figcaption>'
                         f'<img alt="{html.escape(figure.title)}" src="data:image/png;base64,{data}"></figure>')
        elif kind == "card":
            parts.append('<div class="card">' + to_html(rest[0]) + "</div>")
    return "\n".join(parts)


def write_report(run_dirs: list[Path], out: Path | None = None, allow_mixed: bool = False,
                 trial_ids: list[str] | None = None, force: bool = False) -> tuple[Path, Path]:
    """Write report.html, report.md and figures/*.png into `out` (default: the first run's report/); give both paths.

    The folder is written whole or not at all; an existing one is replaced only with `force`.
    `trial_ids` choose the trials whose CPU / GPU utilization is plotted (default: the fastest of each mode).
    """
    runs = load_many(run_dirs, allow_mixed=allow_mixed)
    out = Path(out) if out else runs[0].run_dir / "report"
    trials = pd.concat([r.trials for r in runs], ignore_index=True)
    samples = pd.concat([r.samples for r in runs], ignore_index=True)
    unknown = sorted(set(trial_ids or ()) - set(trials["trial_id"]))
    if unknown:
        raise UsageError(f"report: no trial {', '.join(unknown)} in these runs")
    with atomic_dir(out, force=force, inputs=[r.run_dir for r in runs], inside_inputs=True) as tmp:
        figures = render(trials, samples, trial_ids, [r.study for r in runs if r.study], profiled(runs),
                         model_errors(runs))
        blocks = build_blocks(runs, figures)
        (tmp / FIGURES_DIR).mkdir()
        for figure in figures:
            (tmp / FIGURES_DIR / f"{figure.id}.png").write_bytes(figure.png)
        page = (f'<!doctype html><html><head><meta charset="utf-8"><title>pipebench report</title>'
                f"<style>{_STYLE}</style></head><body>{to_html(blocks)}</body></html>")
        (tmp / HTML_FILE).write_text(page, encoding="utf-8")
        (tmp / MARKDOWN_FILE).write_text(to_markdown(blocks), encoding="utf-8")
    return out / HTML_FILE, out / MARKDOWN_FILE
