"""The experiment file's schema: every key's type, default, range, check and doc (SCHEMA, SECTIONS), and the one
resolver that checks a block against it (`resolve_block`, `typed_block`).

The schema is the whole format: each key's `doc` and each block's entry in SECTIONS are what
docs/reference/experiment-file.md says of it (pipebench.docs writes that page; experiments/deepfm.yaml
is the example). Every key is optional except `name`; unknown keys and wrong types are errors, because
a misspelt knob that silently keeps its default produces a benchmark of the wrong thing. For the same
reason a key given twice is an error (pipebench.yamlfile reads the file), every number must be finite
and in its key's stated range (pipebench.values), and `--set` values pass the very same checks.
"""
from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar


from pipebench.config.choices import ENV_KNOBS, TRAINERS, TRIAL_MODES
from pipebench.config.service import COMPRESSIONS, READS, SHARDING_POLICIES
from pipebench.errors import ConfigError
from pipebench.model import OPTIMIZERS
from pipebench.pipeline.function import check_entry
from pipebench.pipeline.orderings import Enumeration
from pipebench.pipeline.spec import SOURCE_MODES, STAGE_KINDS
from pipebench.typed import from_json
from pipebench.values import (ABOVE_0, ANY, AT_LEAST_0, AT_LEAST_1, PLAIN_NAME, PLAIN_NAME_RULE, PROBABILITY, Range,
                              check_number, echo, name_text, refuse_non_finite)


#: What the Optuna driver can optimise: examples/sec up, peak RSS down, held-out AUC up, and the
#: instance's price per million examples down (from the checklist's catalog).
OBJECTIVES = ("examples_per_sec", "rss_peak_bytes", "auc", "cost_per_million_examples")

T = TypeVar("T")


class _Any:
    """A block checked by its own module (e.g. pipelines.orderings by pipeline.orderings), then kept as given."""


@dataclass(frozen=True)
class Field:
    """One key of the schema: its type, default, allowed values or range, any further check, and what it does.

    `check(value, where)` gives the value once it passes (a folder name, a block another module
    parses); `url` marks a value that may be a URL with a password, which is never written out;
    `doc` is the key's description in docs/reference/experiment-file.md (pipebench.docs writes it).
    """

    kind: Any  # int, float, str, bool, list[...] as ("list", kind), or _Any
    default: Any = None
    choices: tuple | None = None
    nullable: bool = True
    allowed: Range = ANY  # numbers only
    check: Callable[[Any, str], Any] | None = None
    url: bool = False
    doc: str = ""


def _list(kind: Any, default: Any = None, choices: tuple | None = None, allowed: Range = ANY, doc: str = "") -> Field:
    return Field(("list", kind), default, choices, True, allowed, doc=doc)


def _folder_name(value: str, where: str) -> str:
    """Give `value` if it can name a folder under results/ (no path, no hidden or dot folder); ConfigError otherwise."""
    if PLAIN_NAME.fullmatch(value):
        return value
    raise ConfigError(f"{where}: must be a plain folder name ({PLAIN_NAME_RULE}), not {echo(value)}")


def _orderings(block: Any, where: str) -> Any:
    """Give the `pipelines.orderings` block as given, once it parses as an Enumeration."""
    Enumeration.from_dict(block, where)
    return block


def _functions(block: Any, where: str) -> list[dict]:
    """Give the `pipelines.functions` entries, each checked as far as it can be without reading its file."""
    if not isinstance(block, list):
        raise ConfigError(f"{where}: must be a list of {{function: PATH.py:FUNCTION, kwargs: {{...}}, name: ...}}, "
                          f"not {type(block).__name__}")
    return [check_entry(entry, f"{where}[{i}]") for i, entry in enumerate(block)]


def _space(block: Any, where: str) -> Any:
    """Give the `search.space` block as given, once it parses as a search space."""
    from pipebench.config.space import parse_space  # space.py is the search space's one parser

    parse_space(block, where)
    return block


#: A configuration id: the first 12 hex digits of a hash of everything its trials share (pipebench.search.grid).
CONFIGURATION_ID = re.compile(r"[0-9a-f]{12}")
SEED = Range(0, 2**32 - 1)  # numpy's RandomState (Optuna's samplers) takes no more

#: What each environment knob of `grid.env` sets in a trial's process before TensorFlow starts.
_ENV_DOCS = {
    "OMP_NUM_THREADS": "OpenMP threads. Acts only when TensorFlow links an OpenMP runtime; stock wheels link none "
                       "(`pipebench env` says which), so the measurements show it inert there.",
    "KMP_AFFINITY": "Intel OpenMP thread placement, e.g. `granularity=fine,compact,1,0` or `disabled`. Acts only "
                    "when TensorFlow links an OpenMP runtime.",
    "KMP_BLOCKTIME": "Milliseconds an Intel OpenMP thread spins after its work before it sleeps. Acts only when "
                     "TensorFlow links an OpenMP runtime.",
    "KMP_SETTINGS": "Intel OpenMP prints its settings at start when true. Acts only when TensorFlow links an "
                    "OpenMP runtime.",
    "TF_ENABLE_ONEDNN_OPTS": "`1` or `0`: turns TensorFlow's oneDNN ops on or off (null: the build's default; "
                             "`pipebench env` says which).",
}

#: What each block of the schema is for (docs/reference/experiment-file.md; tests check every block has one).
SECTIONS: dict[str, str] = {
    "data": "The data the trials read: synthetic rows made on the spot (`synth`), or your own files (`files`).",
    "data.synth": "Synthetic Criteo-like rows from a planted model (`pipebench data synth`), made once per spec "
                  "into `cache_dir` and reused. Used only when `data.files` is not given.",
    "data.files": "Your own data instead of `synth`: a mapping format → list of globs, or a plain list of files "
                  "or globs, each file's format told from its bytes. Formats the pipelines read that are not "
                  "given are converted once from a given one into `cache_dir`.",
    "model": "The DeepFM model train trials run (the AWS SageMaker DeepFM sample's defaults).",
    "pipelines": "The input pipelines to measure: presets, each on some formats, and every legal reordering of "
                 "a stage list, read in each source mode.",
    "grid": "The settings grid: every combination is a configuration (with `search.driver: grid`).",
    "grid.env": "Environment variables set before TensorFlow starts: each a list of values to try (null: unset).",
    "search": "How configurations are chosen: the whole grid, or an Optuna study over `space`.",
    "measurement": "How each trial is measured: warm-up, windows, rounds, repeats, sampling, the busy-machine rule "
                   "and the trainer the input-bound verdict speaks for.",
    "quality": "The quality guard: train trials also train a fresh model and report AUC on held-out rows, so a "
               "faster batch size that hurts the model shows.",
    "budget": "Limits of the run: trials, time, failures, and each trial's time and memory.",
    "sources": "How each source mode reads its files (`pipelines.source_modes`).",
    "sources.file": "Source mode `file`: local files.",
    "sources.fastfile": "Source mode `fastfile`: SageMaker FastFile, emulated locally (a latency per file opened "
                        "and one shared link).",
    "sources.pipe": "Source mode `pipe`: SageMaker's PipeModeDataset op (TF 2.14 environment only), fed by a "
                    "local emulator of SageMaker's FIFO protocol.",
    "sources.service": "Source mode `service`: the stages before `split_before` run on tf.data service workers.",
}

SCHEMA: dict[str, Any] = {
    "name": Field(str, None, nullable=False, check=_folder_name,
                  doc="The experiment's name; its runs go to `results/<name>/<run-id>`. A plain folder name: "
                      f"{PLAIN_NAME_RULE}."),
    "quick": _list(str, [], doc="`KEY=VALUE` overrides that `pipebench run --quick` applies (before any `--set`), "
                                "e.g. `data.synth.rows=100000`."),
    "data": {
        "synth": {
            "rows": Field(int, 200_000, allowed=AT_LEAST_1, doc="Training rows to make."),
            "files": Field(int, 4, allowed=AT_LEAST_1, doc="Files the rows are split into (the same rows whatever "
                                                           "the count)."),
            "seed": Field(int, 0, allowed=AT_LEAST_0, doc="Seed of the planted model and the rows (numpy's "
                                                          "SeedSequence takes no negative seed)."),
            "field_size": Field(int, 39, allowed=Range(2), doc="Fields per row (the DeepFM sample's 39: 13 numeric "
                                                               "and 26 categorical)."),
            "feature_size": Field(int, 117581, allowed=Range(1, 2**31),
                                  doc="Distinct feature ids: the model's embedding table rows. Below 2³¹, since the "
                                      "packed format stores ids as int32."),
            "positive_rate": Field(float, 0.25, allowed=Range(0, 1, low_open=True, high_open=True),
                                   doc="Share of positive labels the planted model's bias is calibrated to."),
        },
        "files": {
            "libsvm": _list(str, doc="libsvm files or globs (plain or gzip)."),
            "tfrecord": _list(str, doc="TFRecord files (one tf.train.Example per row) or globs; `s3://` URIs are "
                                       "kept as given."),
            "packed": _list(str, doc="Packed TFRecord files (`pipebench convert --format packed`) or globs."),
        },
        "holdout_files": _list(str, doc="Held-out rows of `data.files` (TFRecord or libsvm) for the quality guard "
                                        "(`quality.enabled`)."),
        "formats": _list(str, ["libsvm", "tfrecord", "packed"], choices=("libsvm", "tfrecord", "packed"),
                         doc="Formats the synthetic data is written in."),
        "holdout_rows": Field(int, 20_000, allowed=AT_LEAST_0,
                              doc="Held-out synthetic rows (another stream of the same planted model) for the "
                                  "quality guard."),
        "rows_per_record": Field(int, 256, allowed=AT_LEAST_1, doc="Rows per record of the packed format."),
        "cache_dir": Field(str, "results/.data", doc="Where made and converted data is kept, one folder per spec "
                                                     "or file set, and reused by later runs."),
    },
    "model": {
        "embedding_size": Field(int, 32, allowed=AT_LEAST_1, doc="Width of each feature's embedding."),
        "deep_layers": _list(int, [256, 128, 64], allowed=AT_LEAST_1, doc="Units of each hidden layer of the MLP."),
        "dropout": Field(float, 0.5, allowed=Range(0, 1, high_open=True),
                         doc="Dropout rate of the MLP's layers (a rate of 1 would drop every unit)."),
        "l2": Field(float, 1e-4, allowed=AT_LEAST_0, doc="L2 regularisation of the FM weights and embeddings."),
        "optimizer": Field(str, "adam", choices=OPTIMIZERS, doc="The Keras optimizer."),
        "learning_rate": Field(float, 0.0005, allowed=ABOVE_0, doc="The optimizer's learning rate."),
    },
    "pipelines": {
        "presets": _list(str, ["lambdaji-libsvm", "aws-sample"],
                         doc="Presets to measure: `aws-sample`, `lambdaji-libsvm`, `guide` (`pipebench pipelines "
                             "list PRESET`)."),
        "functions": Field(_Any, [], check=_functions,
                           doc="Your own tf.data functions, measured beside the presets: a list of `{function: "
                               "PATH.py:FUNCTION, kwargs: {...}, name: ...}` (PATH relative to the experiment file; a "
                               "kwargs value `${data.tfrecord}` is the run's TFRecord files). config.yaml records "
                               "each file's sha256 (docs/guides/your-own-pipeline.md)."),
        "formats": _list(str, None, choices=("libsvm", "tfrecord", "packed"),
                         doc="Each preset is measured on each of these formats; null: each preset on its own "
                             "format."),
        "orderings": Field(_Any, check=_orderings,
                           doc="A stage list (`source`, `stages`, `options`, `enumerate`) whose every legal "
                               "reordering is measured, each labelled with its semantics against this reference "
                               "(`pipebench pipelines list FILE`). Orderings that change what training sees stay "
                               "out unless named in `enumerate.allow`."),
        "source_modes": _list(str, ["file"], choices=SOURCE_MODES,
                              doc="Every pipeline is measured reading its data each of these ways. `pipe` drops "
                                  "`interleave`, parallel reads and the read buffer (one FIFO stream per channel)."),
        "baseline": Field(str, None, doc="What the run's closing sentence measures the fastest configuration "
                                         "against: a pipeline of this experiment (a preset or function name, or "
                                         "`enumerated` for the orderings' reference) or a configuration id "
                                         "(`configuration_id` in trials.parquet); null: the first function (your "
                                         "own pipeline), else the first preset. `run --baseline NAME` sets "
                                         "it."),
    },
    "grid": {
        "batch_size": _list(int, [1024], allowed=AT_LEAST_1, doc="Batch sizes to measure."),
        "intra_op_threads": _list(int, [None], allowed=AT_LEAST_0,
                                  doc="TensorFlow intra-op pool sizes (`TF_NUM_INTRAOP_THREADS` and "
                                      "`tf.config.threading`, set before TensorFlow starts); null: TensorFlow's "
                                      "default."),
        "inter_op_threads": _list(int, [None], allowed=AT_LEAST_0,
                                  doc="TensorFlow inter-op pool sizes (`TF_NUM_INTEROP_THREADS`); null: "
                                      "TensorFlow's default."),
        "env": {knob: _list(str, [None], doc=_ENV_DOCS[knob]) for knob in ENV_KNOBS},
    },
    "modes": _list(str, list(TRIAL_MODES), choices=TRIAL_MODES,
                   doc="What trials measure: `input` the pipeline alone; `train` the DeepFM train step on the "
                       "pipeline and, in alternating rounds in the same worker, its synthetic ceiling (the step on "
                       "one batch from memory); `synthetic` the ceiling alone."),
    "search": {
        "driver": Field(str, "grid", choices=("grid", "optuna"),
                        doc="`grid` measures every configuration of `grid`; `optuna` searches `space` in a study."),
        "n_trials": Field(int, 30, allowed=AT_LEAST_1,
                          doc="Trials in the study: the exploration and the confirmation phase together."),
        "mode": Field(str, "input", choices=TRIAL_MODES, doc="What each study trial measures."),
        "seed": Field(int, None, allowed=SEED, doc="The sampler's seed, for a repeatable study; null: not seeded."),
        "sampler": Field(str, "tpe", choices=("tpe", "random"),
                         doc="`tpe`: multivariate TPE with the constant liar; `random`: random search."),
        "pruner": Field(str, "margin", choices=("none", "margin", "median", "hyperband"),
                        doc="Stops hopeless trials between windows. `margin`: below `prune_margin` × the median "
                            "of earlier trials at that window; `median`: Optuna's MedianPruner (stops everything "
                            "below the median: under noise, near-best trials too); `hyperband`; `none`."),
        "prune_margin": Field(float, 0.5, allowed=Range(0, 1, low_open=True, high_open=True),
                              doc="The `margin` pruner's share of the median."),
        "storage": Field(str, None, url=True,
                         doc="Optuna storage URL (`sqlite:///...`, `postgresql://...`) or journal file; null: "
                             "`study.journal` in the run folder. A URL's password is never written "
                             "(`config.yaml` keeps `postgresql://user@host/db`): on resume libpq reads it from "
                             "`PGPASSWORD` or `~/.pgpass`."),
        "study_name": Field(str, None, doc="The study's name; null: the experiment's name."),
        "objectives": _list(str, ["examples_per_sec"], choices=OBJECTIVES,
                            doc="What the study optimises: `examples_per_sec` (up); add `rss_peak_bytes` (down), "
                                "`auc` (up; `quality.enabled`, mode train) or `cost_per_million_examples` (down; "
                                "needs the instance type and its catalog price) for a Pareto front."),
        "space": Field(_Any, check=_space,
                       doc="Knob → list of choices or `{low, high, log}`. Knobs: `pipeline`, `batch_size`, "
                           "`intra_op_threads`, `inter_op_threads`, `env.<KNOB>`, `stage.<kind>.<param>`, "
                           "`stage.<kind>.enabled`, `source.num_parallel_reads`, `source.buffer_size`, "
                           "`option.<tf.data option>`; null: every preset and ordering, `grid.batch_size`, "
                           "threads 0..vCPUs and the environment knobs."),
        "pin_inert": Field(bool, True, doc="Pin knobs this machine cannot honour (KMP_* without OpenMP, ...) "
                                           "before any trial, and log why."),
        "enqueue_reference": Field(bool, True,
                                   doc="Start from the references (the deck's settings, TF defaults, AUTOTUNE "
                                       "everywhere) and race them in the confirmation phase."),
        "confirm_top": Field(int, 2, allowed=Range(0, 10),
                             doc="After exploring, this many best configurations (by geometric mean) and the "
                                 "references are measured again in interleaved rounds, out of `n_trials`, to pick "
                                 "the winner by paired comparison; 0: no confirmation phase (and no winner)."),
        "confirm_rounds": Field(int, 3, allowed=Range(2, 100), doc="Rounds of the confirmation race."),
        "catalog": Field(str, None, doc="Instance catalog YAML for the cost objective; null: the shipped one."),
        "heartbeat_sec": Field(float, 30.0, allowed=Range(0.5),
                               doc="A running trial's heartbeat; a trial silent for 4 heartbeats is run again."),
    },
    "measurement": {
        "warmup_max_sec": Field(float, 10.0, allowed=AT_LEAST_0,
                                doc="Warm-up runs until three 0.5 s slices agree within `steady_cv_pct`, at most "
                                    "this long (the row says `warmup_steady: false` if it never steadied)."),
        "window_sec": Field(float, 1.0, allowed=Range(0.05), doc="Length of a window of whole timed calls."),
        "windows": Field(int, 5, allowed=AT_LEAST_1, doc="Rounds each trial measures at least."),
        "max_windows": Field(int, 15, allowed=AT_LEAST_1,
                             doc="Train trials go on measuring rounds while their verdict's interval straddles "
                                 "5% or 20%, up to this many (`rounds_cap_hit` says when)."),
        "repeats": Field(int, 3, allowed=AT_LEAST_1,
                         doc="Fresh processes per configuration, one per round of the run. Three give every two "
                             "configurations a paired ratio with an interval (t with 2 degrees of freedom); one "
                             "gives none, and nothing is compared."),
        "steady_cv_pct": Field(float, 5.0, allowed=AT_LEAST_0,
                               doc="Warm-up ends when three slices' coefficient of variation is within this."),
        "sample_hz": Field(float, 4.0, allowed=Range(0.5, 100), doc="The sampler reads /proc this often."),
        "cold_cache": Field(bool, False, doc="Train trials also time a pass right after evicting their files from "
                                             "the page cache (`fetch_stall_pct`)."),
        "page_cache": Field(bool, False, doc="The sampler also reads the data files' page-cache residency."),
        "busy_other_cpu_pct": Field(float, 25.0, allowed=Range(0, 10_000),
                                    doc="Other processes' CPU during a trial's windows (100 = one vCPU) past which "
                                        "the trial is flagged `busy_machine`."),
        "remeasure_busy": Field(bool, True, doc="Measure a trial flagged busy once more at the end of the run; the "
                                                "quieter measurement counts."),
        "trainer": Field(str, "auto", choices=TRAINERS, nullable=False,
                         doc="Where the model the input-bound verdict speaks for trains: `cpu` (on the pipeline's "
                             "own CPUs: the verdict reads the slowdown), `accelerator` (fed by the host: it reads "
                             "the waiting share), or `auto` (where the train step ran here). `run --trainer` and "
                             "`worker --trainer` set it."),
    },
    "quality": {
        "enabled": Field(bool, False, doc="Train trials also train a fresh model and report AUC on held-out rows "
                                          "(`data.holdout_rows`, or `data.holdout_files` with `data.files`)."),
        "train_examples": Field(int, 100_000, allowed=AT_LEAST_1, doc="Examples the fresh model trains on."),
        "eval_examples": Field(int, 20_000, allowed=AT_LEAST_1, doc="Held-out examples AUC is measured on."),
    },
    "budget": {
        "max_trials": Field(int, None, allowed=AT_LEAST_1, doc="Stop after this many trials; null: no cap."),
        "max_minutes": Field(float, None, allowed=ABOVE_0, doc="Start no trial once this many minutes have "
                                                               "passed; null: no deadline."),
        "max_failure_rate": Field(float, 0.5, allowed=PROBABILITY,
                                  doc="The run stops once more than this share of its trials broke (`failed`, "
                                      "`timeout`, `memory_cap`, `invalid`), judged from the 4th finished trial on "
                                      "(exit 3)."),
        "trial_timeout_sec": Field(float, 300.0, allowed=AT_LEAST_1,
                                   doc="A trial running longer is killed and recorded with status `timeout`."),
        "memory_cap_mb": Field(int, 8192, allowed=Range(64),
                               doc="A trial whose process tree's RSS passes this is killed and recorded with "
                                   "status `memory_cap`."),
        "trials_per_worker": Field(int, 4, allowed=AT_LEAST_1,
                                   doc="Trials of one repeat that share the environment variables and thread pools "
                                       "run one after another in one warm worker, this many at most (pipebench's own "
                                       "pipelines read from files; a function pipeline, another source mode and "
                                       "each repeat keep a process of their own): a worker's start and TensorFlow "
                                       "import are paid once; its train trials of one batch shape are timed in one "
                                       "measurement, each one's train arm beside one ceiling (`measured_together`). "
                                       "1: a fresh process per trial."),
    },
    "sources": {
        "file": {"cold": Field(bool, False, nullable=False,
                               doc="Evict each file from the page cache (`posix_fadvise(DONTNEED)`) as it opens, "
                                   "every epoch: a whole trial of cold reads.")},
        "fastfile": {
            "emulate": Field(bool, True, nullable=False,
                             doc="false: read the files as they are (on SageMaker, `/opt/ml/input/data/<channel>`)."),
            "first_read_latency_ms": Field(float, 20.0, nullable=False, allowed=AT_LEAST_0,
                                           doc="Each file opened waits this long (concurrent opens wait together)."),
            "bandwidth_mb_per_sec": Field(float, 200.0, allowed=Range(0.001),
                                          doc="One link shared by all files, in MB/s (MB = 10⁶ bytes); null: no "
                                              "cap."),
        },
        "pipe": {
            "emulate": Field(bool, True, nullable=False,
                             doc="false: read SageMaker's own FIFOs (the folders below; null: PipeModeDataset's "
                                 "defaults)."),
            "reader": Field(str, "op", choices=("op", "python"), nullable=False,
                            doc="`op`: SageMaker's PipeModeDataset (TF 2.14 environment only); `python`: pipebench's "
                                "pure-Python FIFO reader, a labelled fallback."),
            "pipe_dir": Field(str, None, doc="Where the FIFOs are; null: `/opt/ml/input/data`."),
            "config_dir": Field(str, None, doc="Where `inputdataconfig.json` is; null: `/opt/ml/input/config`."),
            "state_dir": Field(str, None, doc="PipeModeDataset's epoch state; null: `/opt/ml/pipe_state`. With "
                                              "`emulate: false` it must outlive a trial."),
            "shuffle_seed": Field(int, None, allowed=AT_LEAST_0,
                                  doc="Emulated ShuffleConfig: a new file order every epoch; null: files in order."),
            "bandwidth_mb_per_sec": Field(float, None, allowed=Range(0.001),
                                          doc="Emulated channel cap in MB/s; null: none."),
        },
        "service": {
            "workers": Field(int, 1, nullable=False, allowed=Range(1, 64),
                             doc="tf.data service workers, each its own process on 127.0.0.1."),
            "sharding_policy": Field(str, "DYNAMIC", choices=SHARDING_POLICIES, nullable=False,
                                     doc="How `distribute` splits the data between workers."),
            "split_before": Field(str, "prefetch", choices=STAGE_KINDS, nullable=False,
                                  doc="The stages before the first stage of this kind run on the workers; the rest "
                                      "runs in the trial."),
            "read": Field(str, "file", choices=READS, nullable=False,
                          doc="How the workers read the files; that mode's keys apply."),
            "compression": Field(str, "AUTO", choices=COMPRESSIONS, nullable=False,
                                 doc="Compression of what the service sends."),
            "max_outstanding_requests": Field(int, None, allowed=AT_LEAST_1,
                                              doc="`distribute`'s max_outstanding_requests; null: TF's default."),
            "worker_cpus": _list(int, None, allowed=AT_LEAST_0,
                                 doc="Pin worker i to CPU `worker_cpus[i % len]`; null: unpinned."),
            "fixed_worker_list": Field(bool, True, nullable=False,
                                       doc="The dispatcher knows the workers' addresses (needed by static "
                                           "sharding policies)."),
            "dispatcher": Field(str, None, doc="HOST:PORT of a running service: no servers are started; null: the "
                                               "trial starts its own."),
        },
    },
    "results": Field(str, "results", doc="The folder runs are written under: `<results>/<name>/<run-id>`."),
}


class _Invalid(ConfigError):
    """A schema failure: `path` is the YAML path it failed at (to tell a file's fault from a `--set`'s)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path


def _check(value: Any, field: Field, where: str) -> Any:
    """Give `value` checked against `field` (an int widened to float, a number to str where asked); ConfigError."""
    if value is None:
        if field.nullable:
            return None
        raise ConfigError(f"{where}: required")
    kind = field.kind
    if kind is _Any:
        return field.check(copy.deepcopy(value), where)
    if isinstance(kind, tuple):
        if not isinstance(value, list):
            value = [value]  # a scalar is a one-value list: `batch_size: 1024`
        item = Field(kind[1], None, field.choices, True, field.allowed)
        return [_check(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
    if kind in (int, float):
        return check_number(value, where, kind, field.allowed)
    if kind is str and isinstance(value, (int, float)) and not isinstance(value, bool):
        refuse_non_finite(value, where)
        value = str(value)  # env values such as OMP_NUM_THREADS: 2
    if not isinstance(value, kind):
        raise ConfigError(f"{where}: must be {kind.__name__}, not {type(value).__name__} {echo(value)}")
    if field.choices is not None and value not in field.choices:
        raise ConfigError(f"{where}: must be one of {', '.join(field.choices)}, not {echo(value)}")
    return field.check(value, where) if field.check else value


def _resolve(obj: Any, schema: dict, where: str) -> dict:
    if obj is None:
        obj = {}
    if not isinstance(obj, Mapping):
        raise _Invalid(where, f"{where or 'experiment'}: must be a mapping, not {type(obj).__name__}")
    unknown = sorted(set(map(str, obj)) - set(schema))
    if unknown:
        path = f"{where}.{name_text(unknown[0])}" if where else name_text(unknown[0])
        raise _Invalid(path, f"{path}: unknown key (expected one of {', '.join(schema)})")
    out = {}
    for key, sub in schema.items():
        path = f"{where}.{key}" if where else key
        if isinstance(sub, dict):
            out[key] = _resolve(obj.get(key), sub, path)
            continue
        try:
            out[key] = _check(obj[key] if key in obj else copy.deepcopy(sub.default), sub, path)
        except ConfigError as err:  # a nested block's message starts with the deeper path it failed at
            message = str(err)
            raise _Invalid(message.partition(": ")[0] if message.startswith(path) else path, message) from None
    return out


def resolve_block(name: str, obj: Any) -> dict:
    """Give the validated top-level block `name` of `obj` with defaults filled in (e.g. a trial's `sources`)."""
    return _resolve(obj, SCHEMA[name], name)


def typed_block(cls: type[T], name: str, given: Mapping) -> T:
    """Give the top-level block `name` as the typed record `cls` (a TrialSpec's Measurement, Model, Quality,
    Sources): the keys given, checked, the others at their defaults; ConfigError for a key or value it cannot take."""
    return from_json(cls, resolve_block(name, dict(given)), name)
