"""The diagnosis as plain typed data: what the worker finds and the CLI reports and exports (no TensorFlow).

It crosses a process boundary (the worker writes it, the CLI reads it strictly, pipebench.typed) and
is what diagnosis.json holds, so every figure a user sees comes from here: one producer.

A pipeline's stages and steps are pipebench.pipeline.stages' (the one stage model); the diagnosis holds them.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipebench.measure.intervals import Interval
from pipebench.pipeline.prefixes import Prefix
from pipebench.pipeline.stages import Stage, Step
from pipebench.results.stage_costs import StageCost
from pipebench.typed import load_json, to_json

#: 2 (2026-11-26): a rewrite's gain is an Interval {"mean", "low", "high", "n"} (was {"ratio", "low", "high",
#: "rounds"}); the version key is `schema_version` (was `diagnosis_version`).
#: 3 (2026-11-28): figures count rows (`rows_per_sec`, `cpu_us_per_row`: were examples, counted as elements);
#: stages inside an interleave's function (`Stage.inside`); `tf1`, `upgraded`, `ignored_calls`, `buffers`, `measured_as`,
#: `feeds`, `inner_notes`, `content_rows`; the profiler's answer as a record of its own (`Profiler`).
#: 4 (2026-11-29): `machine`, how busy the machine was while the diagnosis measured.
#: 5 (2026-11-29): a rewrite's `ceiling`, the most it can gain, read from the prefixes (pipebench.diagnose.ceiling).
#: 6 (2026-11-29): the whole pipeline's rate over two worker processes (`rows_per_sec`, `process_rows_per_sec`); a
#: combination's `parts`; kept rewrites confirmed in the second process (pipebench.diagnose.second).
#: 7 (2026-12-02): no `feeds`, `defaults` nor `Step.tied` (the export is the user's file patched: its parameters
#: feed what they fed); a stage's `op` (what TensorFlow runs, read from the dataset's graph) and `via` (the library function
#: that made it); the content check's scope says when pipebench's sample was not used; `self_check` (a plain loop over
#: the user's function beside the whole pipeline); `passes` (a cache's first pass and its later ones, apart);
#: `pass_elements` (a one-pass pipeline whose start is a share of each pass, measured in whole passes).
#: 8 (2026-12-03): a prefix's cost is the capacity profile's record beside its prefix (`PrefixCost`: `prefix`, `cost`,
#: `share`); its rows are the record's examples.
#: 9 (2026-12-04): the self-check's `equivalence`, the 90% interval its agreement is judged by (two one-sided tests).
#: 10 (2026-12-04): `awake`, the whole pipeline with idle cores kept awake over it (or `awake_note`, why not); the
#: self-check's `spread`, the factor between the two speeds its band is widened by.
#: 11 (2026-12-05): the self-check's `window_spread`, the factor between the faster and the slower half of the whole
#: pipeline's own windows paired with it (its band is widened by the larger of the two).
DIAGNOSIS_VERSION = 11


@dataclass(frozen=True)
class PrefixCost:
    """One measured prefix of the user's pipeline: what it adds, what it costs, and its share of the CPU.

    Its prefix says what it adds and where that may run (pipebench.pipeline.prefixes); its cost is the capacity
    profile's record (pipebench.results.stage_costs: its examples are rows, one rule, pipebench.pipeline.rows)."""

    prefix: Prefix  # what it adds, and the cores its working stage may use
    cost: StageCost  # its rate and CPU per row, measured (rows as examples)
    share: float  # of the whole pipeline's CPU per row

    @property
    def stage(self) -> int:
        return self.prefix.stage

    @property
    def stages(self) -> tuple[int, ...]:
        return self.prefix.adds

    @property
    def lanes(self) -> float:
        return self.prefix.lanes or 0.0

    @property
    def sequential(self) -> bool:
        return self.prefix.sequential

    @property
    def why_sequential(self) -> str | None:
        return self.prefix.why_sequential

    @property
    def prefix_rows_per_sec(self) -> Interval:
        return self.cost.prefix_examples_per_sec

    @property
    def prefix_cpu_us_per_row(self) -> Interval:
        return self.cost.prefix_cpu_sec_per_example.scaled(1e6)

    @property
    def cpu_us_per_row(self) -> float:
        """Its own: what its prefix adds to the most any shorter prefix cost."""
        return self.cost.cpu_sec_per_example * 1e6

    @property
    def capacity_rows_per_sec(self) -> float | None:
        """Give the rows/s it can pass: the cores it may use over its own CPU per row; None when it costs nothing."""
        per_core = self.cost.rate_per_core
        return None if per_core is None else self.lanes * per_core


@dataclass(frozen=True)
class Content:
    """How one epoch of a rewrite compares with one epoch of the original (pipebench.diagnose.content)."""

    same_elements: bool  # the same multiset of examples (of the components the original reproduces)
    same_order: bool | None  # None: the original's own order is random
    examples: int  # in the rewrite's epoch
    original_examples: int
    semantics: str | None  # the exact change when not the same elements, or the order when that changed
    random_components: tuple[str, ...]  # components that differ between two runs of the original itself
    capped: bool  # the epoch was cut at the cap (an endless pipeline): the first N examples were compared


@dataclass(frozen=True)
class Rewrite:
    """One rewrite: proposed where its precondition holds, tried, kept only when faster with the same content."""

    name: str  # "vectorize decode", "parallel map augment", "cache after decode", ...
    kind: str  # vectorize, parallel_map, parallel_interleave, parallel_reads, cache, prefetch, shrink_prefetch,
    #            options, convert, py_function
    stage: int | None
    why: str  # the precondition that holds, in words
    change: str  # what it changes in the pipeline, in words
    semantics: str | None  # a change in what training sees that the rewrite brings by construction
    automatic: bool  # pipebench builds and measures it; False: named (with its measured cost where it has one)
    steps: tuple[Step, ...]  # the rewritten pipeline (empty when not automatic)
    options: dict[str, Any]  # tf.data options it sets ("deterministic": False, ...)
    gain: Interval | None  # over the original, paired per round; None: not measured (not automatic or not built)
    same_elements: bool | None  # one epoch yields the same examples (content.semantics names what changed); None: not read
    content: Content | None
    kept: bool
    verdict: str  # why kept or not, in one line
    cost_share: float | None = None  # for a named rewrite: the measured share of the pipeline's CPU it concerns
    ceiling: float | None = None  # the most it can gain (×), read from the measured prefixes; None: nothing bounds it
    parts: tuple[str, ...] = ()  # a combination's: the names of the kept rewrites it puts together


@dataclass(frozen=True)
class TrainTerms:
    """The train step and its ceiling with one pipeline (pipebench.measure.figures' slowdown)."""

    pipeline: str  # "original" or "rewritten"
    train_rows_per_sec: Interval
    ceiling_rows_per_sec: Interval
    slowdown: Interval  # 1 − train / ceiling, paired per round
    waiting: Interval  # share of step time blocked in get_next


@dataclass(frozen=True)
class Train:
    """Training in the diagnosis: which model, why, and what input costs it before and after."""

    model: str  # "DeepFM (pipebench's)" or the user's --model function
    why: str  # how the elements were matched to the model
    terms: tuple[TrainTerms, ...]


@dataclass(frozen=True)
class Profiler:
    """The TF Profiler's answer beside pipebench's bottleneck (pipebench.diagnose.profiler), or why there is none."""

    available: bool
    answer: str  # its bottleneck and hint in words, or "unavailable: reason"
    iterator: str | None  # the iterator it names, as the profiler spells it ("Iterator::Root::Prefetch::ParallelMapV2")
    stage: int | None  # the stage that iterator belongs to, when one does
    agrees: bool | None  # whether that is pipebench's bottleneck (None: nothing to compare)


@dataclass(frozen=True)
class Upgrade:
    """The user's TF1 module as TensorFlow's tf_upgrade_v2 converted it, diagnosed in its place."""

    file: str  # its name in the output folder: upgraded_<the user's module>.py (there with the kept rewrite written in)
    changes: int
    report: str  # the converter's report, one change a line
    source: str  # the converted module's text, as converted (the one diagnosed)


@dataclass(frozen=True)
class Buffer:
    """A buffer of the user's pipeline large enough to say what it holds and how long it takes to fill."""

    stage: int
    kind: str  # "prefetch" or "shuffle"
    elements: int  # as written
    rows: int  # what it holds, in rows
    mib: float | None  # what it holds in memory, estimated from a sample's bytes per row (None: unknown)
    fill_sec: float | None  # how long filling it takes at the rate measured up to it (None: not measured)
    measured_as: str  # how the measurement treated it, in words


@dataclass(frozen=True)
class Machine:
    """How busy the machine was while the diagnosis measured (pipebench.measure.sampler.OthersCpu): a neighbour, or
    the hypervisor running another guest on this machine's vCPUs (its steal), changes every figure measured beside
    it, as it does a trial's (`busy_machine`)."""

    others_cpu_pct: float  # processes other than the worker's, and the steal, in % of one vCPU, over the measurement
    steal_pct: float  # of which the hypervisor's steal, in % of one vCPU
    threshold_pct: float  # measurement.busy_other_cpu_pct's default: past it the diagnosis is busy
    busy: bool


@dataclass(frozen=True)
class SelfCheck:
    """A plain loop over the user's own function (`for element in input_fn(...)`, rows counted by the label's leading
    dimension), timed in windows paired with the whole pipeline's, in one process (pipebench.diagnose.selfcheck)."""

    plain_rows_per_sec: Interval  # the plain loop's, over its windows
    ratio: Interval  # the plain loop's rate over the whole pipeline's as diagnose measures it, paired per round
    agrees: bool | None  # equivalent within expected / AGREE_WITHIN .. AGREE_WITHIN; False: wholly outside; None: neither
    how: str  # what the plain loop iterated, in words
    loop_us_per_element: float = 0.0  # a Python loop's own cost per element, read over one element from memory
    expected: float = 1.0  # the least ratio that cost explains: 1 / (1 + cost × the whole pipeline's elements/s)
    equivalence: Interval | None = None  # the ratio's interval the agreement is judged by (selfcheck, EQUIVALENCE_CONFIDENCE)
    spread: float = 1.0  # the factor between its two speeds, idle cores kept awake and not (measure.awake)
    window_spread: float = 1.0  # the factor between the faster and the slower half of its own windows paired here

    @property
    def widened(self) -> float:
        """Give the factor the band is widened by: the larger of the two spreads (pipebench.diagnose.selfcheck)."""
        return max(self.spread, self.window_spread)


@dataclass(frozen=True)
class Pass:
    """One kind of pass over a pipeline that caches: the first (the cache filling: every row computed up to it) or a
    later one (served from the filled cache)."""

    which: str  # "first" or "later"
    rows_per_sec: Interval
    bottleneck: int  # an index into the stages
    bottleneck_why: str


@dataclass(frozen=True)
class Passes:
    """A pipeline whose first pass and later ones differ (a cache): which the diagnosis is of, and the other."""

    main: str  # "first" or "later": the pass the diagnosis's figures, bottleneck and rewrites are of
    other: Pass
    sees: str  # which pass training sees, in words, from its repeat


@dataclass(frozen=True)
class Diagnosis:
    """What `pipebench diagnose` found: written whole as diagnosis.json."""

    schema_version: int  # the layout version (pipebench.versioned)
    function: str  # PATH.py:FUNCTION
    signature: str  # the user's, e.g. "(filenames, batch_size=32, num_epochs=1)"
    parameters: tuple[str, ...]  # its parameter names, in order
    kwargs: dict[str, Any]  # what it was called with (--set)
    tf_version: str
    cores: int
    element: str  # the element structure, in words
    options: dict[str, Any]  # tf.data options set on the root (those not at their defaults)
    tf1: str | None  # how the dataset was captured behind a TF1 iterator (get_next() returned), None: it returned one
    upgraded: Upgrade | None  # the TF1 module converted by tf_upgrade_v2 and diagnosed in its place, when it was
    ignored_calls: tuple[str, ...]  # TF1 switches the code called that diagnose ignored (disable_eager_execution)
    stages: tuple[Stage, ...]
    inner_notes: dict[str, str]  # by stage index: why an interleave's own function was not walked
    steps: tuple[Step, ...]  # the original pipeline as replayable steps (empty when a stage cannot be replayed)
    buffers: tuple[Buffer, ...]
    measured_as: tuple[str, ...]  # how the pipeline measured differs from the user's (capped buffers, a take left out)
    content_scope: str  # what the content check read: a sample of the files (pipebench.diagnose.sample) or more
    content_rows: int  # the rows of the original the content check compared
    replay_note: str | None  # why the original cannot be replayed, if it cannot
    costs: tuple[PrefixCost, ...]
    bottleneck: int  # an index into stages
    bottleneck_why: str
    profiler: Profiler
    rewrites: tuple[Rewrite, ...]
    combined: Rewrite | None  # the kept rewrites together, measured again; None when fewer than two were kept
    train: Train | None
    train_note: str | None  # why there are no train terms, if there are none
    seconds: float  # the diagnosis took, in its worker processes (their starts left out)
    machine: Machine  # how busy the machine was from the first measurement to the last (the busier worker's)
    rows_per_sec: Interval | None = None  # the whole pipeline's, over the worker processes (pipebench.diagnose.second)
    process_rows_per_sec: tuple[Interval, ...] = ()  # each worker process's, over its own rounds
    self_check: SelfCheck | None = None  # a plain loop over the user's function beside it (the second process)
    passes: Passes | None = None  # a cached pipeline's first pass and later ones, apart
    # set: `rows_per_sec` is of whole passes of this many elements, their start (a shuffle's fill, a take) included,
    # timed in the second worker process (pipebench.diagnose.subject.Subject._whole_passes); the first process's
    # figure in `process_rows_per_sec` is then the steady rate past a pass's start
    pass_elements: int | None = None
    # the whole pipeline with idle cores kept awake over it as diagnosed, paired in the second worker process
    # (pipebench.measure.awake: a pipeline that hands elements between threads waits for sleeping cores to wake)
    awake: Interval | None = None
    awake_note: str | None = None  # why `awake` was not measured ("unavailable: ...")

    def to_json(self) -> dict:
        return to_json(self)

    @classmethod
    def load(cls, path: Path) -> Diagnosis:
        return load_json(cls, path)


@dataclass(frozen=True)
class Request:
    """What the CLI asks the worker: the function, its arguments, the measurement settings."""

    function: str  # path (absolute)
    name: str
    kwargs: dict[str, Any]
    model: str | None  # path:name of a --model function
    rounds: int
    window_sec: float
    settle_sec: float
    warmup_sec: float  # the train arms' warm-up cap (pipebench.measure.windows)
    content_cap_rows: int  # the content check compares at most this many rows (when no sample can be made)
    scratch: str  # a folder the worker may write (the content check's sample of the data)
    progress_file: str
    train: bool = True  # measure the train step (a first worker whose second measures it, and tests, leave it out)
    profile: bool = True  # run the TF Profiler beside it
    second_follows: bool = False  # a second worker process confirms the kept rewrites (pipebench.diagnose.second)
    first: str | None = None  # this is that second process: the first's diagnosis.json
    deadline: float | None = None  # time.time() past which no optional round starts (pipebench.diagnose.subject)

    def to_json(self) -> dict:
        return to_json(self)

    @classmethod
    def load(cls, path: Path) -> Request:
        return load_json(cls, path)


@dataclass(frozen=True)
class Answer:
    """The worker's answer: a diagnosis, or the one line saying why there is none."""

    diagnosis: Diagnosis | None
    error: str | None
    error_kind: str | None  # "usage" (the user's code or arguments), "data", "failed" (pipebench's own fault)

    def to_json(self) -> dict:
        return to_json(self)

    @classmethod
    def load(cls, path: Path) -> Answer:
        return load_json(cls, path)
