"""`pipebench data synth`: Criteo-like layout, determinism, planted labels, the oracle AUC."""
from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
from tfdata import read_examples

from pipebench.converters import libsvm
from pipebench.converters.convert import ConvertRequest, convert
from pipebench.synth import VALUE_SCALE, PlantedModel, SynthSpec, synthesize


def parse_folder(folder):
    data = b"".join((p.read_bytes() if p.suffix != ".gz" else gzip.decompress(p.read_bytes()))
                    for p in sorted(folder.glob("part-*")))
    parsed = libsvm.parse_chunk(data, 39, 117581)
    assert (parsed.status == libsvm.OK).all()
    return parsed, data


def exact_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    sorted_scores = scores[order]
    _, first, counts = np.unique(sorted_scores, return_index=True, return_counts=True)
    ranks[order] = np.repeat(first + (counts + 1) / 2.0, counts)
    positives = labels.sum()
    negatives = len(labels) - positives
    return (ranks[labels == 1].sum() - positives * (positives + 1) / 2) / (positives * negatives)


def test_layout_is_criteo_like(tmp_path):
    described = synthesize(SynthSpec(rows=3000, out=tmp_path / "s", seed=3))
    parsed, _ = parse_folder(tmp_path / "s")
    ids, values = parsed.ids, parsed.values
    assert (np.diff(ids, axis=1) > 0).all(), "ids ascend within a row"
    assert (ids[:, :13] == np.arange(1, 14)).all()
    assert ((values[:, :13] >= 0) & (values[:, :13] <= 1)).all() and (values[:, :13] == 0).any()
    assert (values[:, 13:] == 1).all()
    ranges = described.categorical_id_ranges
    assert len(ranges) == 26 and ranges[0][0] == 14 and ranges[-1][1] <= 117581
    for field, (lo, hi) in enumerate(ranges):
        column = ids[:, 13 + field]
        assert ((column >= lo) & (column < hi)).all()
    head = ids[:, 13 + int(np.argmax([hi - lo for lo, hi in ranges]))]
    counts = np.sort(np.bincount(head))[::-1]
    assert counts[0] > 5 * counts[min(20, len(counts) - 1)], "Zipf: a few ids dominate"
    assert set(np.unique(parsed.labels)) <= {0.0, 1.0}


def test_same_seed_same_rows_whatever_the_file_count(tmp_path):
    synthesize(SynthSpec(rows=20000, out=tmp_path / "one", seed=5))
    synthesize(SynthSpec(rows=20000, out=tmp_path / "three", seed=5, files=3, compression="gzip"))
    synthesize(SynthSpec(rows=20000, out=tmp_path / "other", seed=6))
    held_out = synthesize(SynthSpec(rows=20000, out=tmp_path / "held", seed=5, stream=1))
    one, three, other, held = (parse_folder(tmp_path / n)[1] for n in ("one", "three", "other", "held"))
    assert one == three and one != other and held not in (one, other)
    assert held_out.bias == json.loads((tmp_path / "one" / "synth.json").read_text())["bias"], "same model"
    sizes = json.loads((tmp_path / "three" / "synth.json").read_text())["files"]
    assert [f["rows"] for f in sizes] == [6667, 6667, 6666]


def test_labels_follow_the_planted_model_and_oracle_auc_is_exact(tmp_path):
    spec = SynthSpec(rows=30000, out=tmp_path / "s", seed=11, positive_rate=0.3)
    described = synthesize(spec)
    parsed, _ = parse_folder(tmp_path / "s")
    model = PlantedModel(spec)
    codes = np.rint(parsed.values.astype(np.float64) * VALUE_SCALE).astype(np.int64)
    prob = 1 / (1 + np.exp(-(model.logits(parsed.ids, codes) + model.bias)))
    labels = parsed.labels.astype(np.int64)
    assert described.positive_rate == pytest.approx(labels.mean())
    assert abs(labels.mean() - 0.3) < 0.02
    assert described.oracle_auc == pytest.approx(exact_auc(prob, labels), abs=2e-4)
    assert 0.7 < described.oracle_auc < 0.9
    shuffled = np.random.default_rng(0).permutation(labels)
    assert abs(exact_auc(prob, shuffled) - 0.5) < 0.03, "the AUC measure itself is not biased"


@pytest.mark.tf
def test_tfrecord_format_equals_converted_libsvm(tmp_path):
    synthesize(SynthSpec(rows=2500, out=tmp_path / "text", seed=2))
    synthesize(SynthSpec(rows=2500, out=tmp_path / "direct", seed=2, format="tfrecord", files=2))
    convert(ConvertRequest(inputs=tuple(sorted((tmp_path / "text").glob("part-*"))), out=tmp_path / "conv"))
    (tmp_path / "direct" / "manifest.json").write_text(json.dumps({
        "field_size": 39, "tf_compression_type": "",
        "shards": json.loads((tmp_path / "direct" / "synth.json").read_text())["files"]}))
    for a, b in zip(read_examples(tmp_path / "direct"), read_examples(tmp_path / "conv")):
        assert np.array_equal(a, b)


def test_bad_spec_is_a_usage_error(cli, tmp_path):
    code, _, err = cli("data", "synth", "--rows", 10, "--out", tmp_path / "x", "--feature-size", 20)
    assert code == 2 and "--feature-size 20 is too small" in err
    code, _, err = cli("data", "synth", "--rows", 10, "--out", tmp_path / "x", "--positive-rate", 1.5)
    assert code == 2 and "--positive-rate" in err
    assert not (tmp_path / "x").exists()


def test_one_row_has_no_oracle_auc_and_says_so(cli, tmp_path):
    """With every label the same, the AUC is undefined: synth.json holds null and the summary says n/a."""
    code, out, err = cli("data", "synth", "--rows", 1, "--out", tmp_path / "one")
    assert (code, err) == (0, "")
    assert out.startswith("data synth: file 1/1 written (1/1 rows)") and "oracle AUC n/a" in out
    assert json.loads((tmp_path / "one" / "synth.json").read_text())["oracle_auc"] is None
