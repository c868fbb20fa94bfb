"""Shared views of the trials table for figures, report and checklist: best rows, decode style, gains."""
from __future__ import annotations

import json

import pandas as pd

from pipebench.measure.trial import ENV_KNOBS

ENV_COLUMNS = tuple(f"env_{name}" for name in ENV_KNOBS)
#: The deck's recommended pipeline (the AWS sample's File-mode input_fn) is pipebench's `aws-sample` preset.
DECK_PIPELINE = "aws-sample"


def ok_rows(trials: pd.DataFrame, mode: str | None = None) -> pd.DataFrame:
    """Give the finished trials (of `mode`), fastest first."""
    rows = trials[trials["status"] == "ok"]
    if mode is not None:
        rows = rows[rows["mode"] == mode]
    return rows.sort_values("examples_per_sec_median", ascending=False)


def best_row(trials: pd.DataFrame) -> pd.Series | None:
    """Give the fastest train trial, else the fastest input trial, else None."""
    for mode in ("train", "input"):
        rows = ok_rows(trials, mode)
        if not rows.empty:
            return rows.iloc[0]
    return None


def listed(value) -> list:
    """Give a list column's cell as a list (pandas holds Parquet lists as arrays, and missing ones as None)."""
    return [] if value is None or (isinstance(value, float) and pd.isna(value)) else list(value)


def stage_kinds(row: pd.Series) -> list[str]:
    """Give the stage names of the trial's pipeline in order (from params_json)."""
    try:
        stages = json.loads(row["params_json"] or "{}").get("pipeline", {}).get("stages", [])
    except (TypeError, ValueError):
        return []
    return [next(iter(stage)) for stage in stages if isinstance(stage, dict) and stage]


def decode_style(row: pd.Series) -> str | None:
    """Give 'vectorized' (batch before decode), 'scalar' (decode before batch) or None."""
    kinds = stage_kinds(row) or [part.strip() for part in str(row.get("ordering") or "").split(">")]
    if "batch" not in kinds or "decode" not in kinds:
        return None
    return "vectorized" if kinds.index("batch") < kinds.index("decode") else "scalar"


def at_defaults(row: pd.Series) -> bool:
    """Tell whether the trial left threads and every environment knob at TensorFlow's defaults."""
    values = [row.get("intra_op_threads"), row.get("inter_op_threads"), *(row.get(c) for c in ENV_COLUMNS)]
    return all(v is None or (isinstance(v, float) and pd.isna(v)) for v in values)


def gains(trials: pd.DataFrame, best: pd.Series) -> dict[str, dict]:
    """Give the best trial's speed-up over the deck's recommended pipeline and over TF's default settings.

    Each entry names the row it compares against; an entry is absent when the run has no such row.
    """
    rows = ok_rows(trials, best["mode"])
    out: dict[str, dict] = {}
    deck = rows[(rows["pipeline"] == DECK_PIPELINE) & (rows["format"] == "tfrecord")]
    deck = deck[deck.apply(at_defaults, axis=1)] if not deck.empty else deck
    if not deck.empty:
        out["deck_recommended"] = _gain(best, deck.iloc[0], "the deck's recommended pipeline (aws-sample, "
                                                           "TFRecord, TF default threads)")
    same = rows[(rows["pipeline"] == best["pipeline"]) & (rows["format"] == best["format"])
                & (rows["ordering"] == best["ordering"]) & (rows["batch_size"] == best["batch_size"])]
    same = same[same.apply(at_defaults, axis=1)] if not same.empty else same
    if not same.empty:
        out["tf_defaults"] = _gain(best, same.iloc[0], "the same pipeline with TF default threads and no env knobs")
    return out


def _gain(best: pd.Series, other: pd.Series, what: str) -> dict:
    return {"against": what, "trial_id": other["trial_id"],
            "examples_per_sec": float(other["examples_per_sec_median"]),
            "speedup": float(best["examples_per_sec_median"] / other["examples_per_sec_median"])}
