"""`pipebench data synth`: Criteo-like rows with labels from a planted model a DeepFM can learn.

Rows follow the DeepFM sample's libsvm layout: `numeric_fields` numeric fields (ids 1..13 for 39
fields, values in [0, 1] with 5 decimals, 0 when missing) then categorical fields, each with its
own id range and Zipf-distributed ids of value 1, so ids ascend within a row like the real files.

Labels: `p = sigmoid(bias + Σ w[id]·value + Σ_(a,b) <u[id_a], u[id_b]>)` over a few planted field
pairs, bias calibrated to `positive_rate`; label ~ Bernoulli(p). `oracle_auc` in synth.json is the
AUC that scoring by the true p reaches on the written labels: the ceiling for any model.

`--format criteo` writes the same planted model as raw Kaggle rows (label, I1-I13, C1-C26, tab
-separated; converters.criteo): numeric value v becomes the integer round(v × clip_k) of lambdaji's
clip point (an empty column where v is missing), and category rank r of field j the hex text of
(r × 2654435761 + salt_j) mod 2**32, one-to-one. Labels are drawn from the integers' values
(round(v × clip_k) / clip_k), so `oracle_auc` holds for the raw rows; a converter that maps them
keeps it, short of what its cutoff merges.

Generation runs in blocks with their own seeded streams, so output is deterministic for a seed
and memory stays constant whatever the row count.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numba
import numpy as np

import pipebench
from pipebench.converters import criteo, tfrecord
from pipebench.converters.convert import COMPRESSED_SUFFIX, SUFFIX
from pipebench.converters.example import encode_examples
from pipebench.converters.manifest import Made
from pipebench.converters.shards import ShardWriter
from pipebench.atomic import atomic_dir, atomic_write_json
from pipebench.errors import UsageError
from pipebench.progress import Progress
from pipebench.synth_facts import SYNTH_FILE, SYNTH_VERSION, SynthFacts

BLOCK_ROWS = 8192
VALUE_SCALE = 100_000  # numeric values are k / VALUE_SCALE, written with 5 decimals
ZIPF_EXPONENT = 1.1
LATENT_DIM = 4
WEIGHT_SCALE = 0.2
NUMERIC_WEIGHT_SCALE = 1.0
INTERACTION_SCALE = 0.35
INTERACTION_PAIRS = 6
_AUC_BINS = 1 << 16
FORMATS = ("libsvm", "tfrecord", "criteo")
CRITEO_SUFFIX = ".txt"
_HASH_MULTIPLIER = 2654435761  # odd, so rank → hash is one-to-one modulo 2**32


@dataclass(frozen=True)
class SynthSpec:
    """What to generate; mirrors the `pipebench data synth` flags."""

    rows: int
    out: Path
    files: int = 1
    seed: int = 0
    field_size: int = 39
    feature_size: int = 117581
    positive_rate: float = 0.25
    format: str = "libsvm"
    compression: str = "none"
    force: bool = False
    stream: int = 0  # another stream gives other rows of the same planted model (a held-out split)

    @property
    def numeric_fields(self) -> int:
        return min(self.field_size - 1, round(self.field_size / 3))

    def check(self) -> None:
        """Raise UsageError for values that cannot produce a data set."""
        if self.rows < 1 or self.files < 1:
            raise UsageError("--rows and --files must be at least 1")
        if self.files > self.rows:
            raise UsageError(f"--files {self.files} exceeds --rows {self.rows}")
        if self.seed < 0 or self.stream < 0:
            raise UsageError(f"--seed and --stream must be at least 0, not {min(self.seed, self.stream)}")
        if self.field_size < 2:
            raise UsageError("--field-size must be at least 2")
        categorical = self.field_size - self.numeric_fields
        if self.feature_size < 1 + self.numeric_fields + 2 * categorical:
            raise UsageError(f"--feature-size {self.feature_size} is too small for {self.field_size} fields "
                             f"(needs at least {1 + self.numeric_fields + 2 * categorical})")
        if not 0.0 < self.positive_rate < 1.0:
            raise UsageError("--positive-rate must lie strictly between 0 and 1")
        if self.format not in FORMATS:
            raise UsageError(f"--format must be one of {', '.join(FORMATS)}")
        if self.compression not in tfrecord.COMPRESSIONS or (self.format != "tfrecord" and self.compression == "zlib"):
            raise UsageError("--compression must be none or gzip (or zlib for --format tfrecord)")
        if self.format == "criteo" and self.field_size != criteo.FIELD_SIZE:
            raise UsageError(f"--format criteo writes Kaggle's {criteo.FIELD_SIZE} fields; drop --field-size "
                             f"{self.field_size}")


class PlantedModel:
    """Field id ranges, Zipf tables and the true weights, all derived from the seed."""

    def __init__(self, spec: SynthSpec) -> None:
        rng = np.random.default_rng([spec.seed, 0])
        self.field_size = spec.field_size
        self.numeric = spec.numeric_fields
        categorical = spec.field_size - self.numeric
        first_categorical_id = 1 + self.numeric
        available = spec.feature_size - first_categorical_id
        weights = 2.0 ** np.linspace(1.0, 14.0, categorical)
        rng.shuffle(weights)
        sizes = np.maximum(2, np.floor(available * weights / weights.sum())).astype(np.int64)
        while sizes.sum() > available:
            sizes[np.argmax(sizes)] -= sizes.sum() - available
        self.cat_sizes = sizes
        self.cat_starts = first_categorical_id + np.concatenate([[0], np.cumsum(sizes)[:-1]])
        self.cat_cdfs = []
        for size in sizes:
            p = 1.0 / np.arange(1, size + 1) ** ZIPF_EXPONENT
            self.cat_cdfs.append(np.cumsum(p) / p.sum())
        self.missing_rate = rng.uniform(0.0, 0.45, self.numeric)
        self.numeric_scale = rng.uniform(0.02, 0.3, self.numeric)
        self.weights = rng.normal(0.0, WEIGHT_SCALE, spec.feature_size)
        self.weights[1 : 1 + self.numeric] = rng.normal(0.0, NUMERIC_WEIGHT_SCALE, self.numeric)
        self.latent = rng.normal(0.0, INTERACTION_SCALE, (spec.feature_size, LATENT_DIM))
        fields = np.arange(self.numeric, spec.field_size)
        pairs = set()
        while len(pairs) < min(INTERACTION_PAIRS, len(fields) * (len(fields) - 1) // 2):
            a, b = sorted(rng.choice(fields, 2, replace=False).tolist())
            pairs.add((a, b))
        self.pairs = sorted(pairs)
        pilot = self.features(np.random.default_rng([spec.seed, 2]), 50_000)
        self.bias = _calibrate(self.logits(*pilot), spec.positive_rate)

    def features(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Give (ids int64[n, F], value codes int64[n, F]) for n rows; code k means k / 1e5."""
        ids = np.empty((n, self.field_size), dtype=np.int64)
        codes = np.empty((n, self.field_size), dtype=np.int64)
        ids[:, : self.numeric] = np.arange(1, self.numeric + 1)
        raw = rng.exponential(self.numeric_scale, (n, self.numeric))
        raw[rng.random((n, self.numeric)) < self.missing_rate] = 0.0
        codes[:, : self.numeric] = np.rint(np.minimum(raw, 1.0) * VALUE_SCALE)
        uniform = rng.random((n, len(self.cat_sizes)))
        for j, cdf in enumerate(self.cat_cdfs):
            rank = np.minimum(np.searchsorted(cdf, uniform[:, j]), len(cdf) - 1)
            ids[:, self.numeric + j] = self.cat_starts[j] + rank
        codes[:, self.numeric :] = VALUE_SCALE
        return ids, codes

    def logits(self, ids: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """Give the planted model's logit (without bias) for each row."""
        logit = (self.weights[ids] * (codes / VALUE_SCALE)).sum(axis=1)
        for a, b in self.pairs:
            logit += (self.latent[ids[:, a]] * self.latent[ids[:, b]]).sum(axis=1)
        return logit


def _calibrate(logits: np.ndarray, positive_rate: float) -> float:
    """Give the bias whose mean sigmoid over `logits` equals positive_rate (bisection)."""
    lo, hi = -30.0, 30.0
    for _ in range(80):
        mid = (lo + hi) / 2
        if (1.0 / (1.0 + np.exp(-(logits + mid)))).mean() < positive_rate:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


@numba.njit(cache=True, nogil=True)
def _write_int(out, pos, v, digits):
    """Write the decimal digits of `v` (≥ 0) into `out` at `pos`; give the position after them."""
    d = 0
    while True:
        digits[d] = 48 + v % 10
        v //= 10
        d += 1
        if v == 0:
            break
    for j in range(d - 1, -1, -1):
        out[pos] = digits[j]
        pos += 1
    return pos


@numba.njit(cache=True, nogil=True)
def _format_rows(labels, ids, codes, scale):
    """Write rows as libsvm text; numeric codes k become k/scale with 5 decimals, trailing 0s cut."""
    n, f = ids.shape
    out = np.empty(n * (3 + f * 30), dtype=np.uint8)
    ends = np.empty(n, dtype=np.int64)
    digits = np.empty(20, dtype=np.uint8)
    pos = 0
    for r in range(n):
        out[pos] = 48 + labels[r]
        pos += 1
        for k in range(f):
            out[pos] = 32
            pos += 1
            pos = _write_int(out, pos, ids[r, k], digits)
            out[pos] = 58
            pos += 1
            c = codes[r, k]
            if c == 0 or c == scale:
                out[pos] = 48 if c == 0 else 49
                pos += 1
            else:
                out[pos] = 48
                out[pos + 1] = 46
                pos += 2
                frac = c
                width = 5
                while frac % 10 == 0:
                    frac //= 10
                    width -= 1
                for j in range(width - 1, -1, -1):
                    out[pos + j] = 48 + frac % 10
                    frac //= 10
                pos += width
        out[pos] = 10
        pos += 1
        ends[r] = pos
    return out[:pos], ends


def _criteo_integers(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Give (integers int64[n, 13], present bool[n, 13]) of numeric value codes, by lambdaji's clip points."""
    clip = np.array(criteo.CLIP, dtype=np.int64)
    return np.rint(codes * clip / VALUE_SCALE).astype(np.int64), codes > 0


def _criteo_hashes(model: PlantedModel, ids: np.ndarray) -> np.ndarray:
    """Give each categorical id's 32-bit hash: one-to-one within a field, salted per field."""
    ranks = ids[:, model.numeric :] - model.cat_starts
    salts = (np.arange(1, len(model.cat_starts) + 1, dtype=np.int64) * 0x9E3779B9) & 0xFFFFFFFF
    return (ranks * _HASH_MULTIPLIER + salts) & 0xFFFFFFFF


@numba.njit(cache=True, nogil=True)
def _format_raw(labels, integers, present, hashes):
    """Write rows as raw Criteo text: label, integers (empty where absent), 8-digit hex, tab-separated."""
    n, k = integers.shape
    out = np.empty(n * (2 + k * 21 + hashes.shape[1] * 9), dtype=np.uint8)
    ends = np.empty(n, dtype=np.int64)
    digits = np.empty(20, dtype=np.uint8)
    pos = 0
    for r in range(n):
        out[pos] = 48 + labels[r]
        pos += 1
        for c in range(k):
            out[pos] = 9
            pos += 1
            if not present[r, c]:
                continue
            pos = _write_int(out, pos, integers[r, c], digits)
        for c in range(hashes.shape[1]):
            out[pos] = 9
            pos += 1
            h = hashes[r, c]
            for j in range(7, -1, -1):
                nibble = h & 15
                out[pos + j] = 48 + nibble if nibble < 10 else 87 + nibble
                h >>= 4
            pos += 8
        out[pos] = 10
        pos += 1
        ends[r] = pos
    return out[:pos], ends


def _show(display: Progress, rows: int, per_file: int, files: int) -> None:
    """Count `rows` more written; a line for each output file they filled."""
    before = int(display.done) // per_file
    display.advance(rows)
    for filled in range(before + 1, min(files, int(display.done) // per_file) + 1):
        display.unit_done(f"data synth: file {filled}/{files} written ({display.done_text()})")
    if display.done >= display.total and before < files and int(display.done) // per_file < files:
        display.unit_done(f"data synth: file {files}/{files} written ({display.done_text()})")


class _AucHistogram:
    """Streaming AUC of true probabilities against drawn labels, from per-bin counts."""

    def __init__(self) -> None:
        self.pos = np.zeros(_AUC_BINS, dtype=np.int64)
        self.neg = np.zeros(_AUC_BINS, dtype=np.int64)

    def add(self, prob: np.ndarray, labels: np.ndarray) -> None:
        bins = np.minimum((prob * _AUC_BINS).astype(np.int64), _AUC_BINS - 1)
        self.pos += np.bincount(bins[labels == 1], minlength=_AUC_BINS)
        self.neg += np.bincount(bins[labels == 0], minlength=_AUC_BINS)

    def auc(self) -> float | None:
        positives, negatives = self.pos.sum(), self.neg.sum()
        if not positives or not negatives:
            return None
        below = np.cumsum(self.neg) - self.neg
        return float((self.pos * below + 0.5 * self.pos * self.neg).sum() / (positives * negatives))


def synthesize(spec: SynthSpec, display: Progress | None = None) -> SynthFacts:
    """Write the data set to spec.out (atomically); give the synth.json description.

    `display` (pipebench.progress, counting rows) hears each block written and each output file filled.
    """
    spec.check()
    model = PlantedModel(spec)
    per_file = -(-spec.rows // spec.files)
    suffix = (CRITEO_SUFFIX if spec.format == "criteo" else SUFFIX[spec.format]) + COMPRESSED_SUFFIX[spec.compression]
    auc = _AucHistogram()
    positives = 0
    with atomic_dir(spec.out, force=spec.force) as tmp:
        writer = ShardWriter(tmp, suffix, spec.compression, rows_per_shard=per_file, shard_count=spec.files)
        try:
            for block in range(math.ceil(spec.rows / BLOCK_ROWS)):
                n = min(BLOCK_ROWS, spec.rows - block * BLOCK_ROWS)
                rng = np.random.default_rng([spec.seed, 1, block] + ([spec.stream] if spec.stream else []))
                ids, codes = model.features(rng, n)
                if spec.format == "criteo":  # labels follow the values the raw integers can express
                    integers, present = _criteo_integers(codes[:, : model.numeric])
                    codes = codes.astype(np.float64)
                    codes[:, : model.numeric] = integers * VALUE_SCALE / np.array(criteo.CLIP)
                prob = 1.0 / (1.0 + np.exp(-(model.logits(ids, codes) + model.bias)))
                labels = (rng.random(n) < prob).astype(np.int64)
                auc.add(prob, labels)
                positives += int(labels.sum())
                if spec.format == "libsvm":
                    writer.write(*_format_rows(labels, ids, codes, VALUE_SCALE))
                elif spec.format == "criteo":
                    writer.write(*_format_raw(labels, integers, present, _criteo_hashes(model, ids)))
                else:
                    values = (codes / VALUE_SCALE).astype(np.float32)
                    writer.write(*tfrecord.frame(*encode_examples(labels.astype(np.float32), ids, values)))
                if display is not None:
                    _show(display, n, per_file, spec.files)
            shards = writer.close()
        except BaseException:
            writer.abort()
            raise
        description = SynthFacts(
            SYNTH_VERSION, Made("pipebench data synth", pipebench.__version__),
            {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(spec).items() if k not in ("out", "force")},
            spec.rows, model.numeric,
            tuple((int(s), int(s + n)) for s, n in zip(model.cat_starts, model.cat_sizes)),
            tuple(tuple(int(i) for i in p) for p in model.pairs), float(model.bias), positives / spec.rows, auc.auc(),
            tuple(shards))
        atomic_write_json(tmp / SYNTH_FILE, description.to_json(), allow_nan=False)
    return description
