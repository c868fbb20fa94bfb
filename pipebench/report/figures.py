"""Matplotlib figures of a run's configurations, as PNG bytes: every figure draws 95% intervals, each
mode gets its own axis (input-only throughput is 10–50× train throughput), configurations measured on a
busy machine are hatched and labelled, and a figure the data cannot support — fewer than two points
to compare — is left out.

matplotlib is imported inside `render`, with the Agg backend, so the CLI stays light and no display is needed.
"""
from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from pipebench.capacity.model import rates_per_core
from pipebench.config.choices import TRIAL_MODES
from pipebench.errors import PipebenchError
from pipebench.measure.figures import WAITING
from pipebench.measure.intervals import INPUT_BOUND_HIGH, INPUT_BOUND_LOW, Interval
from pipebench.report.checklist_records import ModelError
from pipebench.results.configurations import Configuration, configurations, ranked
from pipebench.report.projections import Profiled
from pipebench.report.tables import ENV_COLUMNS, batch_text, decode_style, fastest_by
from pipebench.results.study import StudyRecord, Unavailable
from pipebench.results.trial_row import records

MODE_COLORS = {"input": "tab:blue", "train": "tab:orange", "synthetic": "tab:green"}
BUSY_HATCH = "//"
BUSY_NOTE = " [busy machine]"


@dataclass(frozen=True)
class Figure:
    """One rendered figure: a stable id (the file name), a title and the PNG."""

    id: str
    title: str
    png: bytes


def _label(config: Configuration, several_runs: bool = False) -> str:
    row = config.rows[0]
    threads = "/".join("def" if n is None else str(n) for n in (row.intra_op_threads, row.inter_op_threads))
    text = (f"{row.pipeline} · {row.format or '-'} · {row.source_mode or '-'} · {row.ordering or '-'}"
            f" · batch {batch_text(row)} · threads {threads}")
    return (f"{config.run_id}: " if several_runs else "") + text + (BUSY_NOTE if config.busy else "")


def _errors(intervals: Sequence[Interval], scale: float = 1.0) -> list[list[float]]:
    """Give matplotlib's [below, above] error lengths; zero where an interval has fewer than two rounds."""
    below = [0.0 if not i.decided else max(0.0, (i.mean - i.low) * scale) for i in intervals]
    above = [0.0 if not i.decided else max(0.0, (i.high - i.mean) * scale) for i in intervals]
    return [below, above]


def _bars(ax, configs: Sequence[Configuration], intervals: Sequence[Interval], color: str, scale: float = 1.0,
          several_runs: bool = False) -> None:
    """Draw one horizontal bar per configuration with its interval; busy ones hatched."""
    positions = list(range(len(configs)))
    bars = ax.barh(positions, [i.mean * scale for i in intervals], xerr=_errors(intervals, scale), color=color,
                   capsize=3, error_kw={"elinewidth": 1})
    for bar, config in zip(bars, configs):
        if config.busy:
            bar.set_hatch(BUSY_HATCH)
    ax.set_yticks(positions, [_label(c, several_runs) for c in configs], fontsize=7)


def _several_runs(found: Sequence[Configuration]) -> bool:
    return len({c.run_id for c in found}) > 1


def throughput(found: Sequence[Configuration], figure) -> bool:
    """Examples/sec per configuration with intervals, one panel (own scale) per mode; slowest at the bottom."""
    by_mode = {mode: sorted((c for c in found if c.mode == mode), key=lambda c: c.throughput.mean)
               for mode in TRIAL_MODES}
    by_mode = {mode: configs for mode, configs in by_mode.items() if configs}
    if sum(map(len, by_mode.values())) < 2:
        return False
    axes = figure.subplots(len(by_mode), 1, squeeze=False,
                           gridspec_kw={"height_ratios": [len(c) + 1 for c in by_mode.values()]})[:, 0]
    several = _several_runs(found)
    for ax, (mode, configs) in zip(axes, by_mode.items()):
        _bars(ax, configs, [c.throughput for c in configs], MODE_COLORS[mode], several_runs=several)
        ax.set_title(f"{mode} mode", fontsize=9, loc="left")
        ax.set_xlabel("examples/sec (mean; bars: 95% interval over repeats, or over windows of one repeat)",
                      fontsize=8)
    return True


def format_and_map(found: Sequence[Configuration], figure) -> bool:
    """Decode cost: the fastest input-mode configuration per format and decode style, with intervals."""
    mode = "input" if any(c.mode == "input" for c in found) else "train"
    configs = [c for c in found if c.mode == mode]
    cells = fastest_by(configs, lambda c: None if decode_style(c.rows[0]) is None
                         else (c.label["format"], decode_style(c.rows[0])))
    if len(cells) < 2:
        return False
    ax = figure.subplots()
    formats = sorted({f for f, _ in cells})
    styles = sorted({s for _, s in cells})
    width = 0.8 / len(styles)
    for index, style in enumerate(styles):
        present = [(position, cells[(fmt, style)]) for position, fmt in enumerate(formats) if (fmt, style) in cells]
        chosen = [c for _, c in present]
        bars = ax.bar([p + index * width for p, _ in present], [c.throughput.mean for c in chosen], width,
                      yerr=_errors([c.throughput for c in chosen]), capsize=3, label=f"{style} map")
        for bar, config in zip(bars, chosen):
            if config.busy:
                bar.set_hatch(BUSY_HATCH)
    ax.set_xticks([p + width * (len(styles) - 1) / 2 for p in range(len(formats))], formats)
    ax.set_yscale("log")  # decode styles differ by 5–10×: ratios read as equal steps
    ax.set_ylabel(f"fastest {mode}-mode examples/sec\n(95% interval; log scale)")
    ax.set_xlabel("format" + (" (hatched: busy machine)" if any(c.busy for c in cells.values()) else ""))
    ax.legend(title="decode")
    return True


def threads_heatmap(found: Sequence[Configuration], figure) -> bool:
    """The fastest configuration at each intra × inter thread setting, with its interval in the cell."""
    mode = "train" if any(c.mode == "train" for c in found) else "input"
    name = lambda value: "default" if value is None else str(value)  # noqa: E731
    cells = fastest_by([c for c in found if c.mode == mode],
                         lambda c: (name(c.label["intra_op_threads"]), name(c.label["inter_op_threads"])))
    if len(cells) < 2:
        return False
    ax = figure.subplots()
    order = lambda values: sorted(set(values), key=lambda v: (v != "default", int(v) if v.isdigit() else 0))  # noqa: E731
    grid = pd.Series({key: c.throughput.mean for key, c in cells.items()}).unstack()
    grid = grid.reindex(index=order(grid.index), columns=order(grid.columns))
    image = ax.imshow(grid.values, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(grid.columns)), grid.columns)
    ax.set_yticks(range(len(grid.index)), grid.index)
    ax.set_xlabel("inter-op threads")
    ax.set_ylabel("intra-op threads")
    for i, intra in enumerate(grid.index):
        for j, inter in enumerate(grid.columns):
            config = cells.get((intra, inter))
            if config is not None:
                text = config.throughput.text(",.0f").replace(" (", "\n(") + (BUSY_NOTE if config.busy else "")
                ax.text(j, i, text, ha="center", va="center", fontsize=7,
                        bbox={"facecolor": "white", "alpha": 0.75, "edgecolor": "none"})
    figure.colorbar(image, ax=ax, label=f"fastest {mode}-mode examples/sec (mean)")
    return True


def batch_curve(found: Sequence[Configuration], figure) -> bool:
    """Throughput against batch size, one panel (own scale) per mode with two or more batch sizes; AUC on train."""
    curves = {}
    for mode in TRIAL_MODES:
        best = fastest_by([c for c in found if c.mode == mode], lambda c: c.label["batch_size"])
        if len(best) >= 2:
            curves[mode] = dict(sorted(best.items()))
    if not curves:
        return False
    axes = figure.subplots(1, len(curves), squeeze=False)[0]
    for ax, (mode, best) in zip(axes, curves.items()):
        configs = list(best.values())
        ax.errorbar(list(best), [c.throughput.mean for c in configs], yerr=_errors([c.throughput for c in configs]),
                    marker="o", capsize=3, color=MODE_COLORS[mode], label=f"{mode} examples/sec")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("batch size")
        ax.set_ylabel(f"fastest {mode}-mode examples/sec (95% interval)")
        auc = {size: c.rows[0].auc for size, c in best.items() if c.rows[0].auc is not None}
        if mode == "train" and auc:
            twin = ax.twinx()
            twin.plot(list(auc), list(auc.values()), marker="s", color="black", linestyle="--", label="AUC")
            twin.set_ylabel("AUC (train mode, held-out)")
        ax.legend(loc="upper left", fontsize=7)
    return True


def fastest_per_mode(trials: pd.DataFrame) -> list[str]:
    """Give the trial ids worth a utilization plot by default: the first repeat of each mode's fastest configuration."""
    found = configurations(records(trials))
    return [ranked([c for c in found if c.mode == mode])[0][0].rows[0].trial_id
            for mode in TRIAL_MODES if any(c.mode == mode for c in found)]


def utilization(trials: pd.DataFrame, samples: pd.DataFrame, chosen: list[str], figure) -> bool:
    shown = samples[samples["trial_id"].isin(chosen)]
    if shown.empty:
        return False
    ax = figure.subplots()
    modes = dict(zip(trials["trial_id"], trials["mode"]))
    for trial_id, series in shown.groupby("trial_id"):
        t = series["t_sec"] - series["t_sec"].min()
        ax.plot(t, series["cpu_pct_of_vcpus"], label=f"CPU % of vCPUs: {modes[trial_id]} {trial_id}")
        if series["gpu_util_pct"].notna().any():
            ax.plot(t, series["gpu_util_pct"], linestyle="--", label=f"GPU %: {modes[trial_id]} {trial_id}")
    ax.set_ylim(0, 105)
    ax.set_xlabel("seconds since the trial's first sample")
    ax.set_ylabel("utilization %")
    ax.legend(fontsize=7)
    return True


def input_bound(found: Sequence[Configuration], figure) -> bool:
    """Waiting share and slowdown per train configuration, with intervals and the 5% / 20% lines; each verdict is
    written beside the figure it read (the slowdown for a CPU trainer, the waiting share for an accelerator)."""
    configs = sorted((c for c in found if c.mode == "train" and c.pooled.waiting is not None),
                     key=lambda c: c.pooled.waiting.mean)
    if len(configs) < 2:
        return False
    several = _several_runs(found)
    waiting_ax, slowdown_ax = figure.subplots(1, 2, sharey=True, gridspec_kw={"width_ratios": [3, 2]})
    _bars(waiting_ax, configs, [c.pooled.waiting for c in configs], MODE_COLORS["train"], 100.0, several)
    slowdown = [c.pooled.slowdown if c.pooled.slowdown is not None else Interval(0.0, None, None, 0) for c in configs]
    if any(c.pooled.slowdown is not None for c in configs):
        bars = slowdown_ax.barh(range(len(configs)), [i.mean * 100 for i in slowdown], xerr=_errors(slowdown, 100.0),
                                color="tab:purple", capsize=3)
        for bar, config in zip(bars, configs):
            if config.busy:
                bar.set_hatch(BUSY_HATCH)
    for ax in (waiting_ax, slowdown_ax):
        for threshold in (INPUT_BOUND_LOW, INPUT_BOUND_HIGH):
            ax.axvline(100 * threshold, color="red", linestyle=":")
    for position, config in enumerate(configs):
        ax, read = (waiting_ax, config.pooled.waiting) if config.basis == WAITING else (slowdown_ax, slowdown[position])
        ax.annotate(config.verdict, (100 * (read.high if read.high is not None else read.mean), position),
                    xytext=(4, 0), textcoords="offset points", va="center", fontsize=7)
    slowdown_ax.axvline(0, color="black", linewidth=0.5)
    waiting_ax.set_xlabel("waiting for input, % of train-step time (95% interval; red: 5% / 20%; the verdict "
                          "for an accelerator trainer)", fontsize=8)
    slowdown_ax.set_xlabel("slowdown: 1 − train / synthetic, % (95% interval; the verdict for a CPU trainer)",
                           fontsize=8)
    return True


def _study_rows(trials: pd.DataFrame) -> pd.DataFrame:
    if "study" not in trials:
        return trials.iloc[0:0]
    return trials[trials["study"].notna() & (trials["status"] == "ok")]


def study_history(trials: pd.DataFrame, figure) -> bool:
    rows = _study_rows(trials).sort_values("optuna_trial_number")
    if len(rows) < 2:
        return False
    ax = figure.subplots()
    for (study, mode), group in rows.groupby(["study", "mode"]):
        mean = group["examples_per_sec_mean"]
        errors = [(mean - group["examples_per_sec_low"]).fillna(0).clip(lower=0),
                  (group["examples_per_sec_high"] - mean).fillna(0).clip(lower=0)]
        ax.errorbar(group["optuna_trial_number"], mean, yerr=errors, fmt="o", markersize=3, capsize=2,
                    label=f"{study} {mode}")
        ax.step(group["optuna_trial_number"], mean.cummax(), where="post")
    ax.set_xlabel("Optuna trial number")
    ax.set_ylabel("examples/sec (dots: trial with its 95% interval over windows; line: best so far)")
    ax.legend(fontsize=7)
    return True


STUDY_PARAMETERS = ("batch_size", "intra_op_threads", "inter_op_threads", "ordering", "format", *ENV_COLUMNS)


def parameter_importance(rows: pd.DataFrame) -> pd.Series:
    """Give each varied parameter's share of throughput variance explained by its groups (η², 0–1).

    A plain analysis of variance over the study's rows, not Optuna's fANOVA: it needs no Optuna and
    reads only the results table, but it ignores interactions between parameters.
    """
    speed = rows["examples_per_sec_mean"]
    total = ((speed - speed.mean()) ** 2).sum()
    shares = {}
    for column in STUDY_PARAMETERS:
        values = rows[column].astype("string").fillna("default")
        if values.nunique() < 2 or not total:
            continue
        means = speed.groupby(values).transform("mean")
        shares[column.removeprefix("env_")] = float(((means - speed.mean()) ** 2).sum() / total)
    return pd.Series(shares, dtype=float).sort_values()


def optuna_importance(studies: list[StudyRecord]) -> tuple[str, pd.Series]:
    """Give (study name, importances for examples/sec) from the first study whose Optuna evaluator gave them."""
    for study in studies:
        found = study.importances.get("examples_per_sec")  # a study of other objectives has none
        if found and not isinstance(found, Unavailable):
            return study.study, pd.Series(found, dtype=float).sort_values()
    return "", pd.Series(dtype=float)


def study_importance(trials: pd.DataFrame, studies: list[StudyRecord], figure) -> bool:
    """Bar chart of Optuna's importances as the study saved them; η² over the rows when it saved none."""
    name, importance = optuna_importance(studies)
    label = f"Optuna parameter importance for examples/sec (study {name}, Optuna's default evaluator)"
    if importance.empty:
        rows = _study_rows(trials)
        importance = parameter_importance(rows) if len(rows) > 2 else importance
        label = "share of throughput variance explained (η², no interactions; no importances.json)"
    if len(importance) < 2:
        return False
    ax = figure.subplots()
    ax.barh(list(importance.index), importance.values)
    ax.set_xlim(0, 1)
    ax.set_xlabel(label, fontsize=8)
    return True


def pareto_front(points: pd.DataFrame) -> pd.DataFrame:
    """Give the rows no other row beats on both higher examples/sec and lower peak RSS."""
    ordered = points.sort_values(["rss_peak_bytes", "examples_per_sec_mean"], ascending=[True, False])
    best, keep = float("-inf"), []
    for index, row in ordered.iterrows():
        if row["examples_per_sec_mean"] > best:
            keep.append(index)
            best = row["examples_per_sec_mean"]
    return ordered.loc[keep]


def study_pareto(trials: pd.DataFrame, figure) -> bool:
    rows = _study_rows(trials).dropna(subset=["rss_peak_bytes"])
    if len(rows) < 2:
        return False
    ax = figure.subplots()
    ax.scatter(rows["rss_peak_bytes"] / 2**20, rows["examples_per_sec_mean"], s=12, color="grey", label="trial")
    front = pareto_front(rows)
    ax.step(front["rss_peak_bytes"] / 2**20, front["examples_per_sec_mean"], where="post", color="tab:red",
            marker="o", label="Pareto front")
    ax.set_xlabel("peak RSS (MiB)")
    ax.set_ylabel("examples/sec (mean over windows)")
    ax.legend(fontsize=7)
    return True


def stage_rates(profiles: Sequence[Profiled], figure) -> bool:
    """Each profiled pipeline's stages as examples per CPU-second (95% intervals); sequential stages marked."""
    if not profiles:
        return False
    axes = figure.subplots(len(profiles), 1, squeeze=False,
                           gridspec_kw={"height_ratios": [len(f.profile.stages) + 1 for f in profiles]})[:, 0]
    for ax, found in zip(axes, profiles):
        rates = rates_per_core(found.profile)
        drawn = [(s, r) for s, r in zip(found.profile.stages, rates) if r is not None]
        # an interval reaching zero cost has no upper end: drawn to the mean, and its label says so
        shown = [r if r.high is None or math.isfinite(r.high) else Interval(r.mean, r.low, r.mean, r.n)
                 for _, r in drawn]
        positions = list(range(len(drawn)))
        ax.barh(positions, [r.mean for r in shown], xerr=_errors(shown),
                color=["tab:red" if s.sequential else "tab:blue" for s, _ in drawn], capsize=3)
        ax.set_yticks(positions, [s.stage + (" (sequential: ≤ 1 core)" if s.sequential else "")
                                  + ("" if r.high is None or math.isfinite(r.high) else " (no upper bound)")
                                  for s, r in drawn], fontsize=7)
        ax.set_xscale("log")
        if shown:  # bars start at the decade below the slowest end, so their lengths compare on the log scale
            ax.set_xlim(left=10 ** math.floor(math.log10(min(r.low if r.decided else r.mean for r in shown))))
        free = [s.stage for s, r in zip(found.profile.stages, rates) if r is None]
        ax.set_title(f"{found.profile.pipeline} · batch {found.profile.batch_size} · profiled on "
                     f"{found.profile.cores} CPU(s)" + (f" · no measurable cost: {', '.join(free)}" if free else ""),
                     fontsize=9, loc="left")
        ax.set_xlabel("examples per CPU-second of the stage alone (log scale; bars: 95% interval)", fontsize=8)
    return True


def _drawn(found: Interval) -> Interval:
    """Give an interval to draw; one with no upper end loses its upper whisker."""
    return found if found.high is None or math.isfinite(found.high) else Interval(found.mean, found.low, found.mean,
                                                                                   found.n)


def model_vs_measured(errors: Sequence[ModelError], figure) -> bool:
    """The per-stage model's prediction beside each measurement of the profiled pipeline (95% intervals)."""
    if not errors:
        return False
    ax = figure.subplots()
    positions = list(range(len(errors)))
    predicted = [_drawn(e.predicted) for e in errors]
    measured = [_drawn(e.measured) for e in errors]
    ax.barh([p + 0.2 for p in positions], [i.mean for i in predicted], height=0.4, xerr=_errors(predicted),
            color="tab:purple", capsize=3, label="predicted (per-stage model)")
    ax.barh([p - 0.2 for p in positions], [i.mean for i in measured], height=0.4, xerr=_errors(measured),
            color="tab:grey", capsize=3, label="measured")
    ax.set_yticks(positions, [f"{e.instance_type or e.host_fingerprint} · {e.vcpus} vCPUs · {e.mode}"
                              + (" (profiled here)" if e.profiled_here else "") + f" · {e.error_pct.mean:+.1f}%"
                              for e in errors], fontsize=7)
    ax.set_xlabel("examples/sec (bars: 95% interval)", fontsize=8)
    ax.legend(fontsize=7)
    return True


def _draw(draw: Callable, size: tuple[float, float]) -> bytes | None:
    try:
        import matplotlib
    except ImportError:
        raise PipebenchError("the report's figures need matplotlib: pip install matplotlib") from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure = plt.figure(figsize=size)
    try:
        if not draw(figure):
            return None
        figure.tight_layout()
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=96)
        return buffer.getvalue()
    finally:
        plt.close(figure)


def render(trials: pd.DataFrame, samples: pd.DataFrame, chosen: list[str] | None = None,
           studies: list[StudyRecord] | None = None, profiles: Sequence[Profiled] = (),
           model_errors: Sequence[dict] = ()) -> list[Figure]:
    """Give every figure the tables support, in report order; `chosen` trials get the utilization plot.

    `studies`: the runs' importances.json contents (RunResults.study), for Optuna's importances;
    `profiles` and `model_errors`: the runs' capacity profiles and the model against measurements
    (pipebench.report.projections), for the stage-rate and predicted-vs-measured figures.
    """
    found = configurations(records(trials))
    chosen = chosen or fastest_per_mode(trials)
    train = sum(c.mode == "train" for c in found)
    plans = [
        ("throughput", "Examples/sec per configuration, one scale per mode (95% intervals)",
         lambda f: throughput(found, f), (11, 1.5 + 0.3 * len(found))),
        ("format_and_map", "Decode cost: scalar vs vectorized map by format (95% intervals)",
         lambda f: format_and_map(found, f), (7, 4)),
        ("threads", "Threads heatmap (intra × inter), fastest configuration per cell with its 95% interval",
         lambda f: threads_heatmap(found, f), (7, 4.5)),
        ("batch_size", "Batch-size curves, one scale per mode (95% intervals; AUC when measured)",
         lambda f: batch_curve(found, f), (11, 4)),
        ("utilization", "CPU / GPU utilization over time of the chosen trials",
         lambda f: utilization(trials, samples, chosen, f), (9, 4)),
        ("input_bound", "Waiting for input and slowdown per train configuration (95% intervals)",
         lambda f: input_bound(found, f), (12, 1.5 + 0.4 * train)),
        ("study_history", "Optuna study history", lambda f: study_history(trials, f), (8, 4)),
        ("study_importance", "Optuna study: parameter importance",
         lambda f: study_importance(trials, studies or [], f), (8, 4)),
        ("study_pareto", "Optuna study: throughput vs peak memory, Pareto front", lambda f: study_pareto(trials, f),
         (8, 4)),
        ("stage_rates", "Per-stage CPU cost: examples per CPU-second of each stage (95% intervals)",
         lambda f: stage_rates(profiles, f), (10, 1.5 + 0.4 * sum(len(p.profile.stages) + 1 for p in profiles))),
        ("model_vs_measured", "Per-stage model: predicted vs measured throughput (95% intervals)",
         lambda f: model_vs_measured(model_errors, f), (10, 1.5 + 0.6 * len(model_errors))),
    ]
    out = []
    for figure_id, title, draw, size in plans:
        png = _draw(draw, size)
        if png is not None:
            out.append(Figure(figure_id, title, png))
    return out
