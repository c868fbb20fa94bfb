"""Shared views of the trials table for figures, report, checklist and compare: the fastest configuration,
decode style, knob texts, and the paired gains over the references a run measured.

Every comparison here is between configurations (repeats pooled, pipebench.results.configurations),
never between single rows: one draw of a noisy trial decides nothing.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pipebench.errors import UsageError
from pipebench.measure.intervals import Interval, difference_verdict
from pipebench.config.choices import ENV_KNOBS
from pipebench.measure.trial import TrialSpec
from pipebench.results import TRIALS_FILE, RunResults
from pipebench.results.configurations import NOT_COMPARED, Configuration, configurations, fastest, paired_ratio, ranked
from pipebench.results.run_folder import TRIALS_DIR
from pipebench.results.trial_row import TrialRow
from pipebench.values import echo

ENV_COLUMNS = tuple(f"env_{name}" for name in ENV_KNOBS)
#: The deck's recommended pipeline (the AWS sample's File-mode input_fn) is pipebench's `aws-sample` preset.
DECK_PIPELINE = "aws-sample"
#: The batch size of the deck's pipeline (the sample's default), used when the run has none at the best's batch.
DECK_BATCH_SIZE = 1024


def decode_style(row: TrialRow) -> str | None:
    """Give 'vectorized' (batch before decode), 'scalar' (decode before batch) or None."""
    kinds = row.stage_kinds or [part.strip() for part in str(row.ordering or "").split(">")]
    if "batch" not in kinds or "decode" not in kinds:
        return None
    return "vectorized" if kinds.index("batch") < kinds.index("decode") else "scalar"


def at_defaults(row: TrialRow) -> bool:
    """Tell whether the trial left threads and every environment knob at TensorFlow's defaults."""
    values = [row.intra_op_threads, row.inter_op_threads, *(getattr(row, c) for c in ENV_COLUMNS)]
    return all(v is None for v in values)


def batch_text(row: TrialRow) -> str:
    """Give the trial's batch size, 'its own' for a function pipeline that batches as it is written."""
    return "its own" if row.batch_size is None else str(row.batch_size)


def threads_text(row: TrialRow) -> str:
    """Give the trial's 'intra / inter' threads, 'default' where TensorFlow chose."""
    return threads_of(row.intra_op_threads, row.inter_op_threads)


def threads_of(intra: int | None, inter: int | None) -> str:
    """Give 'intra / inter' threads, 'default' where TensorFlow chose."""
    return " / ".join("default" if threads is None else str(threads) for threads in (intra, inter))


def env_text(row: TrialRow) -> str:
    """Give the environment knobs a trial set, 'none set' when it set none."""
    return env_of({column: getattr(row, column) for column in ENV_COLUMNS})


def env_of(values: Mapping[str, str | None]) -> str:
    """Give the environment knobs set among `values` (env_* column → value), 'none set' when none is."""
    return ", ".join(f"{column[4:]}={value}" for column, value in values.items() if value is not None) or "none set"


def fastest_by(found: Sequence[Configuration], key: Callable[[Configuration], object]) -> dict:
    """Give, for each value of `key` (None skipped), its fastest configuration (ranked)."""
    groups: dict = {}
    for config in found:
        value = key(config)
        if value is not None:
            groups.setdefault(value, []).append(config)
    return {value: ranked(group)[0][0] for value, group in groups.items()}


def ties(found: Sequence[Configuration], best: Configuration) -> list[Configuration]:
    """Give the configurations of best's mode and run its paired ratio cannot tell from it."""
    return [config for config, _, verdict in ranked([c for c in found if c.mode == best.mode])
            if config is not best and verdict == "no measurable difference"]


@dataclass(frozen=True)
class Gain:
    """The best configuration against one reference the run measured: their paired ratio, how they compare."""

    id: str  # "deck_recommended" or "tf_defaults"
    against: str
    reference: Configuration | None  # None: the run measured no such configuration
    ratio: Interval | None  # best / reference over their shared rounds
    verdict: str

    def text(self) -> str:
        """Give the gain as 'N× (a–b): verdict', or why there is none."""
        if self.reference is None:
            return "not measured in this run"
        if self.ratio is None or not self.ratio.decided:
            return NOT_COMPARED
        return f"{self.ratio.text('.2f', unit='×')}: {self.verdict}"


def _same(config: Configuration, best: Configuration, columns: Sequence[str]) -> bool:
    return config.run_id == best.run_id and all(config.label[c] == best.label[c] for c in columns)


def _gain(best: Configuration, candidates: list[Configuration], id_: str, against: str) -> Gain:
    if not candidates:
        return Gain(id_, against, None, None, "not measured")
    # the reference at best's batch size when there is one, else the deck's own batch size
    candidates.sort(key=lambda c: (c.label["batch_size"] != best.label["batch_size"],
                                   c.label["batch_size"] != DECK_BATCH_SIZE, c.label["batch_size"]))
    reference = candidates[0]
    if reference is best:
        return Gain(id_, against, reference, None, "the best configuration is this reference")
    ratio = paired_ratio(best, reference)
    verdict = NOT_COMPARED if ratio is None or not ratio.decided else difference_verdict(ratio)
    return Gain(id_, against, reference, ratio, verdict)


def gains(found: Sequence[Configuration], best: Configuration) -> list[Gain]:
    """Give best's paired gain over the deck's recommended pipeline (aws-sample, on best's own format and source
    mode, TF default threads, no env knobs) and over its own pipeline at TF defaults, in best's mode and run."""
    fmt = best.label["format"]
    deck = [c for c in found if _same(c, best, ("mode", "format", "source_mode")) and
            c.label["pipeline"] == DECK_PIPELINE and at_defaults(c.rows[0])]
    own = [c for c in found if _same(c, best, ("mode", "pipeline", "format", "source_mode", "ordering", "batch_size"))
           and at_defaults(c.rows[0])]
    return [_gain(best, deck, "deck_recommended",
                  f"the deck's recommended pipeline ({DECK_PIPELINE}, {fmt}, TF default threads)"),
            _gain(best, own, "tf_defaults", "the same pipeline with TF default threads and no env knobs")]


@dataclass(frozen=True)
class Chosen:
    """A trial whose pipeline `pipebench pipelines export RUN_DIR` writes, and why it was chosen."""

    trial_id: str
    pipeline: dict  # PipelineSpec.to_dict() form, or a FunctionPipeline's
    why: str
    row: TrialRow | None  # its results row (threads and env to set beside the input_fn), None if only trial.json has it


def _is_file(path: Path) -> bool:
    """Tell whether `path` is a file; a name the system cannot hold (too long, NUL) names none."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def chosen_trial(run: RunResults, trial_id: str | None = None) -> Chosen:
    """Give the trial to export from a run: `trial_id` if given, else the winner an Optuna study recorded
    (its first finished trial in importances.json `winner.trial_ids`), else the first repeat of the fastest configuration (train mode
    first, else input; ranked, repeats pooled). UsageError for an unknown trial or a run with nothing finished."""
    rows = {row.trial_id: row for row in run.rows}
    if trial_id is not None:
        if trial_id in rows:
            row = rows[trial_id]
            return Chosen(trial_id, row.pipeline_spec, f"trial {trial_id} ({row.mode} mode, {row.status})", row)
        path = run.run_dir / TRIALS_DIR / trial_id / "trial.json"
        if "/" not in trial_id and trial_id not in (".", "..") and _is_file(path):
            return Chosen(trial_id, TrialSpec.load(path).pipeline_spec, f"trial {trial_id} (not finished: {path})",
                          None)
        raise UsageError(f"{run.run_dir}: no trial {echo(trial_id)} ({len(rows)} trials in {TRIALS_FILE}; their ids "
                         "are its trial_id column)")
    winner = run.study.winner if run.study is not None else None
    for winner_id in winner.trial_ids if winner is not None else ():
        if winner_id in rows and rows[winner_id].ok:
            row = rows[winner_id]
            return Chosen(winner_id, row.pipeline_spec, f"the study's confirmed winner, trial {winner_id}", row)
    best = fastest(configurations(list(rows.values())))
    if best is None:
        raise UsageError(f"{run.run_dir}: no finished train or input trial to export (give --trial ID to export any "
                         "trial's pipeline)")
    row = best.rows[0]
    return Chosen(row.trial_id, row.pipeline_spec,
                  f"the fastest {best.mode}-mode configuration, {best.throughput.text(',.0f')} examples/s over "
                  f"{best.repeats} repeat(s) (trial {row.trial_id})", row)
