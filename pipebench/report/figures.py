"""Matplotlib figures of a run's tables, as PNG bytes; a figure the data cannot support is left out.

matplotlib is imported inside `render`, with the Agg backend, so the CLI stays light and no display is needed.
"""
from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from pipebench.errors import PipebenchError
from pipebench.measure.trial import TRIAL_MODES
from pipebench.report.tables import ENV_COLUMNS, decode_style, ok_rows



@dataclass(frozen=True)
class Figure:
    """One rendered figure: a stable id (the file name), a title and the PNG."""

    id: str
    title: str
    png: bytes


def _label(row: pd.Series) -> str:
    return f"{row['pipeline']} · {row['format'] or '-'} · {row['source_mode'] or '-'} · {row['ordering'] or '-'}"


def throughput(trials: pd.DataFrame, ax) -> bool:
    rows = ok_rows(trials)
    if rows.empty:
        return False
    rows = rows.assign(label=rows.apply(_label, axis=1)).sort_values(["mode", "examples_per_sec_median"])
    y = range(len(rows))
    colors = {"input": "tab:blue", "train": "tab:orange", "synthetic": "tab:green"}
    median = rows["examples_per_sec_median"]
    spread = [(median - rows["examples_per_sec_p25"]).clip(lower=0).fillna(0),
              (rows["examples_per_sec_p75"] - median).clip(lower=0).fillna(0)]
    ax.barh(list(y), median, xerr=spread, color=[colors.get(m, "grey") for m in rows["mode"]], capsize=3)
    ax.set_yticks(list(y), [f"{m}: {l}" for m, l in zip(rows["mode"], rows["label"])], fontsize=7)
    ax.set_xlabel("examples/sec (median, bars p25–p75)")
    return True


def format_and_map(trials: pd.DataFrame, ax) -> bool:
    rows = ok_rows(trials, "input")
    if rows.empty:
        rows = ok_rows(trials, "train")
    rows = rows.assign(style=rows.apply(decode_style, axis=1)).dropna(subset=["style"])
    if rows.empty:
        return False
    table = rows.groupby(["format", "style"])["examples_per_sec_median"].max().unstack("style")
    table.plot.bar(ax=ax, rot=0)
    ax.set_ylabel(f"best {rows['mode'].iloc[0]} examples/sec")
    ax.set_xlabel("format (libsvm / tfrecord / packed)")
    ax.legend(title="map")
    return True


def threads_heatmap(trials: pd.DataFrame, ax) -> bool:
    rows = ok_rows(trials, "train")
    if rows.empty:
        rows = ok_rows(trials, "input")
    if rows.empty:
        return False
    rows = rows.assign(intra=rows["intra_op_threads"].map(lambda v: "default" if pd.isna(v) else str(int(v))),
                       inter=rows["inter_op_threads"].map(lambda v: "default" if pd.isna(v) else str(int(v))))
    grid = rows.groupby(["intra", "inter"])["examples_per_sec_median"].max().unstack("inter")
    image = ax.imshow(grid.values, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(grid.columns)), grid.columns)
    ax.set_yticks(range(len(grid.index)), grid.index)
    ax.set_xlabel("inter-op threads")
    ax.set_ylabel("intra-op threads")
    for (i, j), value in pd.DataFrame(grid.values).stack().items():
        ax.text(j, i, f"{value:,.0f}", ha="center", va="center", color="white", fontsize=8)
    ax.figure.colorbar(image, ax=ax, label=f"best {rows['mode'].iloc[0]} examples/sec")
    return True


def batch_curve(trials: pd.DataFrame, ax) -> bool:
    rows = ok_rows(trials)
    if rows.empty:
        return False
    for mode in TRIAL_MODES:
        curve = rows[rows["mode"] == mode].groupby("batch_size")["examples_per_sec_median"].max()
        if not curve.empty:
            ax.plot(curve.index, curve.values, marker="o", label=mode)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch size")
    ax.set_ylabel("best examples/sec")
    auc = rows[rows["auc"].notna()].groupby("batch_size")["auc"].max()
    if not auc.empty:
        twin = ax.twinx()
        twin.plot(auc.index, auc.values, marker="s", color="black", linestyle="--", label="AUC")
        twin.set_ylabel("AUC (train mode, held-out)")
    ax.legend(loc="upper left")
    return True


def fastest_per_mode(trials: pd.DataFrame) -> list[str]:
    """Give the trial ids worth a utilization plot by default: the fastest trial of each mode."""
    return [ok_rows(trials, mode).iloc[0]["trial_id"] for mode in TRIAL_MODES if not ok_rows(trials, mode).empty]


def utilization(trials: pd.DataFrame, samples: pd.DataFrame, chosen: list[str], ax) -> bool:
    shown = samples[samples["trial_id"].isin(chosen)]
    if shown.empty:
        return False
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


def input_bound(trials: pd.DataFrame, ax) -> bool:
    rows = ok_rows(trials, "train")
    rows = rows[rows["input_fraction"].notna()]
    if rows.empty:
        return False
    labels = [f"{_label(r)} b{r['batch_size']}" for _, r in rows.iterrows()]
    prep = rows["prep_stall_pct"].fillna(100 * rows["input_fraction"])
    fetch = rows["fetch_stall_pct"].fillna(0)
    positions = list(range(len(labels)))
    ax.barh(positions, prep, label="prep stall (vs synthetic)")
    ax.barh(positions, fetch, left=prep, label="fetch stall (vs cached)")
    ax.set_yticks(positions, labels)
    for threshold in (5, 20):
        ax.axvline(threshold, color="red", linestyle=":")
    ax.set_xlabel("% of train step time waiting for input (TF Profiler: 5% / 20% lines)")
    ax.tick_params(axis="y", labelsize=7)
    ax.legend(fontsize=7)
    return True


def study_history(trials: pd.DataFrame, ax) -> bool:
    if "study" not in trials or trials["study"].isna().all():
        return False
    rows = trials[trials["study"].notna() & (trials["status"] == "ok")].sort_values("optuna_trial_number")
    if rows.empty:
        return False
    for (study, mode), group in rows.groupby(["study", "mode"]):
        ax.scatter(group["optuna_trial_number"], group["examples_per_sec_median"], s=12, label=f"{study} {mode}")
        ax.step(group["optuna_trial_number"], group["examples_per_sec_median"].cummax(), where="post")
    ax.set_xlabel("Optuna trial number")
    ax.set_ylabel("examples/sec (dots: trial, line: best so far)")
    ax.legend(fontsize=7)
    return True


def _study_rows(trials: pd.DataFrame) -> pd.DataFrame:
    if "study" not in trials:
        return trials.iloc[0:0]
    return trials[trials["study"].notna() & (trials["status"] == "ok")]


STUDY_PARAMETERS = ("batch_size", "intra_op_threads", "inter_op_threads", "ordering", "format", *ENV_COLUMNS)


def parameter_importance(rows: pd.DataFrame) -> pd.Series:
    """Give each varied parameter's share of throughput variance explained by its groups (η², 0–1).

    A plain analysis of variance over the study's rows, not Optuna's fANOVA: it needs no Optuna and
    reads only the results table, but it ignores interactions between parameters.
    """
    speed = rows["examples_per_sec_median"]
    total = ((speed - speed.mean()) ** 2).sum()
    shares = {}
    for column in STUDY_PARAMETERS:
        values = rows[column].astype("string").fillna("default")
        if values.nunique() < 2 or not total:
            continue
        means = speed.groupby(values).transform("mean")
        shares[column.removeprefix("env_")] = float(((means - speed.mean()) ** 2).sum() / total)
    return pd.Series(shares, dtype=float).sort_values()


def optuna_importance(studies: list[dict]) -> tuple[str, pd.Series]:
    """Give (study name, importances for examples/sec) from the first study whose Optuna evaluator gave them."""
    for study in studies:
        found = (study.get("importances") or {}).get("examples_per_sec") or {}
        if found and "unavailable" not in found:
            return study.get("study", "study"), pd.Series(found, dtype=float).sort_values()
    return "", pd.Series(dtype=float)


def study_importance(trials: pd.DataFrame, studies: list[dict], ax) -> bool:
    """Bar chart of Optuna's importances as the study saved them; η² over the rows when it saved none."""
    name, importance = optuna_importance(studies)
    label = f"Optuna parameter importance for examples/sec (study {name}, Optuna's default evaluator)"
    if importance.empty:
        rows = _study_rows(trials)
        importance = parameter_importance(rows) if len(rows) > 2 else importance
        label = "share of throughput variance explained (η², no interactions; no importances.json)"
    if importance.empty:
        return False
    ax.barh(list(importance.index), importance.values)
    ax.set_xlim(0, 1)
    ax.set_xlabel(label, fontsize=8)
    return True


def pareto_front(points: pd.DataFrame) -> pd.DataFrame:
    """Give the rows no other row beats on both higher examples/sec and lower peak RSS."""
    ordered = points.sort_values(["rss_peak_bytes", "examples_per_sec_median"], ascending=[True, False])
    best, keep = float("-inf"), []
    for index, row in ordered.iterrows():
        if row["examples_per_sec_median"] > best:
            keep.append(index)
            best = row["examples_per_sec_median"]
    return ordered.loc[keep]


def study_pareto(trials: pd.DataFrame, ax) -> bool:
    rows = _study_rows(trials).dropna(subset=["rss_peak_bytes"])
    if rows.empty:
        return False
    ax.scatter(rows["rss_peak_bytes"] / 2**20, rows["examples_per_sec_median"], s=12, color="grey", label="trial")
    front = pareto_front(rows)
    ax.step(front["rss_peak_bytes"] / 2**20, front["examples_per_sec_median"], where="post", color="tab:red",
            marker="o", label="Pareto front")
    ax.set_xlabel("peak RSS (MiB)")
    ax.set_ylabel("examples/sec")
    ax.legend(fontsize=7)
    return True


def _draw(draw: Callable, size: tuple[float, float]) -> bytes | None:
    try:
        import matplotlib
    except ImportError:
        raise PipebenchError("the report's figures need matplotlib: pip install matplotlib") from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=size)
    try:
        if not draw(ax):
            return None
        figure.tight_layout()
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=96)
        return buffer.getvalue()
    finally:
        plt.close(figure)


def render(trials: pd.DataFrame, samples: pd.DataFrame, chosen: list[str] | None = None,
           studies: list[dict] | None = None) -> list[Figure]:
    """Give every figure the tables support, in report order; `chosen` trials get the utilization plot.

    `studies`: the runs' importances.json contents (RunResults.study), for Optuna's importances.
    """
    chosen = chosen or fastest_per_mode(trials)
    plans = [
        ("throughput", "Examples/sec by pipeline, format, source mode, ordering and mode",
         lambda ax: throughput(trials, ax), (11, max(4.0, 0.3 * len(ok_rows(trials))))),
        ("format_and_map", "Scalar vs vectorized map; libsvm vs TFRecord vs packed", lambda ax: format_and_map(trials, ax), (7, 4)),
        ("threads", "Threads heatmap (intra × inter)", lambda ax: threads_heatmap(trials, ax), (6, 4)),
        ("batch_size", "Batch-size curve (AUC when measured)", lambda ax: batch_curve(trials, ax), (7, 4)),
        ("utilization", "CPU / GPU utilization over time of the chosen trials",
         lambda ax: utilization(trials, samples, chosen, ax), (9, 4)),
        ("input_bound", "Input-bound fraction and stall decomposition", lambda ax: input_bound(trials, ax),
         (11, max(3.0, 0.4 * len(ok_rows(trials, "train"))))),
        ("study_history", "Optuna study history", lambda ax: study_history(trials, ax), (8, 4)),
        ("study_importance", "Optuna study: parameter importance", lambda ax: study_importance(trials, studies or [], ax), (8, 4)),
        ("study_pareto", "Optuna study: throughput vs peak memory, Pareto front", lambda ax: study_pareto(trials, ax),
         (8, 4)),
    ]
    out = []
    for figure_id, title, draw, size in plans:
        png = _draw(draw, size)
        if png is not None:
            out.append(Figure(figure_id, title, png))
    return out
