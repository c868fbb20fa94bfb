"""DeepFM: learns the synth's planted model, trains in Python and in-graph loops, every optimizer works."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from lazy import lazy

from pipebench.converters.libsvm import parse_chunk
from pipebench.errors import ConfigError, DataError
from pipebench.model import OPTIMIZERS
from pipebench.synth import SynthSpec, synthesize

pytestmark = pytest.mark.tf214
tf = lazy("tensorflow")
build_deepfm, evaluate_auc, exact_auc, make_train_loop, make_train_step = (
    lazy("pipebench.model.deepfm", name) for name in ("build_deepfm", "evaluate_auc", "exact_auc", "make_train_loop",
                                                      "make_train_step"))

FIELDS = 39
FEATURES = 2000
ROWS = 20_000
HELD_OUT = 4_000
BATCH = 256


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    """Give (train rows, held-out rows, oracle AUC) of a 20k-row synth data set, parsed from libsvm."""
    out = tmp_path_factory.mktemp("deepfm") / "synth"
    described = synthesize(SynthSpec(rows=ROWS, out=out, feature_size=FEATURES, seed=1))
    text = b"".join((out / f.name).read_bytes() for f in described.files)
    parsed = parse_chunk(text, FIELDS, FEATURES)
    assert not parsed.status.any()
    split = ROWS - HELD_OUT
    rows = (parsed.ids, parsed.values, parsed.labels)
    return tuple(r[:split] for r in rows), tuple(r[split:] for r in rows), described.oracle_auc


def dataset(rows, batch=BATCH):
    ids, values, labels = rows
    return tf.data.Dataset.from_tensor_slices(({"feat_ids": ids, "feat_vals": values}, labels)).batch(batch)


def small_model(**kwargs):
    return build_deepfm(FIELDS, FEATURES, **{"embedding_size": 8, "deep_layers": (32, 16), **kwargs})


def test_output_is_probability_per_example(synth):
    (ids, values, _), _, _ = synth
    model = small_model()
    probs = model({"feat_ids": ids[:5], "feat_vals": values[:5]})
    assert probs.shape == (5,) and probs.dtype == tf.float32
    assert np.all((probs.numpy() > 0) & (probs.numpy() < 1))


def test_defaults_are_the_aws_sample_sizes():
    model = build_deepfm(FIELDS, FEATURES)
    assert model.fm_v.shape == (FEATURES, 32)
    assert [layer.units for layer in model.hidden] == [256, 128, 64]
    assert [d.rate for d in model.dropouts] == [0.5, 0.5, 0.5]
    assert model.l2 == pytest.approx(1e-4)


def test_same_seed_same_model(synth):
    (ids, values, _), _, _ = synth
    features = {"feat_ids": ids[:8], "feat_vals": values[:8]}
    np.testing.assert_array_equal(small_model(seed=3)(features), small_model(seed=3)(features))


def test_training_lowers_loss_and_learns_the_planted_model(synth):
    train, held_out, oracle_auc = synth
    model = small_model()
    step = make_train_step(model)  # the defaults: Adam, learning rate 0.0005
    ids, values, labels = train
    probe = ({"feat_ids": ids[:2000], "feat_vals": values[:2000]}, labels[:2000])
    loss_before = float(model.penalized_log_loss(*probe, training=False))
    auc_before = evaluate_auc(model, dataset(held_out))
    batches = iter(dataset(train).shuffle(64, seed=0).repeat())
    for features, batch_labels in itertools.islice(batches, 300):
        loss = step(features, batch_labels)
    assert loss.shape == () and np.isfinite(loss.numpy())
    loss_after = float(model.penalized_log_loss(*probe, training=False))
    auc_after = evaluate_auc(model, dataset(held_out))
    assert loss_after < loss_before - 0.1
    assert abs(auc_before - 0.5) < 0.05
    assert 0.65 < auc_after < oracle_auc + 0.02


def test_in_graph_loop_runs_the_asked_steps(synth):
    train, _, _ = synth
    model = small_model()
    step = make_train_step(model)
    loop = make_train_loop(step)
    iterator = iter(dataset(train).repeat())
    assert loop(iterator, 7)[0] == 7 * BATCH
    assert loop(iterator, 3)[0] == 3 * BATCH
    assert int(step.optimizer.iterations) == 10


def test_in_graph_loop_stops_at_the_end_of_the_data(synth):
    (ids, values, labels), _, _ = synth
    rows = 10 * 100 + 37
    model = small_model()
    step = make_train_step(model)
    loop = make_train_loop(step)
    iterator = iter(dataset((ids[:rows], values[:rows], labels[:rows]), batch=100))
    assert loop(iterator, 1000)[0] == rows
    assert int(step.optimizer.iterations) == 11
    assert loop(iterator, 5)[0] == 0


def test_in_graph_loop_times_the_wait_for_input_not_the_step(synth):
    """The TF Profiler's input time: a pipeline that sleeps 50 ms per batch makes each step wait at least
    about that long; a batch served from memory makes it wait next to nothing."""
    import time

    train, _, _ = synth
    step = make_train_step(small_model())
    loop = make_train_loop(step)
    fast = dataset(train).take(1).cache().repeat()

    def sleepy(features, labels):
        slept = tf.py_function(lambda: time.sleep(0.05) or 0.0, [], tf.float32)
        return features, labels + 0.0 * slept

    slow = dataset(train).repeat().map(sleepy)
    loop(iter(fast), 2), loop(iter(slow), 2)  # trace both
    _, waited_slow = loop(iter(slow), 10)
    _, waited_fast = loop(iter(fast), 10)
    assert waited_slow >= 0.3, waited_slow  # ten fetches of at least 50 ms, some overlap with the steps allowed
    assert waited_fast < waited_slow / 5, (waited_fast, waited_slow)


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_every_optimizer_updates_the_model(synth, name):
    (ids, values, labels), _, _ = synth
    model = small_model(deep_layers=(8,))
    before = [v.numpy().copy() for v in model.trainable_variables]
    step = make_train_step(model, optimizer=name.upper() if name == "adam" else name, learning_rate=0.01)
    features = {"feat_ids": ids[:64], "feat_vals": values[:64]}
    losses = [float(step(features, labels[:64])) for _ in range(3)]
    assert np.all(np.isfinite(losses))
    assert int(step.optimizer.iterations) == 3
    after = model.trainable_variables
    assert all(not np.array_equal(b, a.numpy()) for b, a in zip(before, after))


def test_unknown_optimizer_is_a_config_error():
    with pytest.raises(ConfigError, match="model.optimizer: unknown optimizer 'lamb'"):
        make_train_step(small_model(), optimizer="lamb")


def test_exact_auc_matches_pairwise_counting():
    rng = np.random.default_rng(0)
    labels = rng.random(300) < 0.3
    scores = np.round(rng.random(300) + 0.3 * labels, 1)  # rounded: many ties
    pos, neg = scores[labels], scores[~labels]
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    pairwise = wins / (pos.size * neg.size)
    assert exact_auc(labels.astype(np.float32), scores) == pytest.approx(pairwise, abs=1e-12)
    assert exact_auc([0, 1], [0.2, 0.9]) == 1.0
    assert exact_auc([0, 1], [0.5, 0.5]) == 0.5


def test_exact_auc_needs_both_labels_and_finite_scores():
    with pytest.raises(DataError, match="all 3 held-out examples are labelled 1"):
        exact_auc([1, 1, 1], [0.1, 0.2, 0.3])
    assert np.isnan(exact_auc([0, 1], [np.nan, 0.3]))
    with pytest.raises(DataError, match="held-out data set is empty"):
        evaluate_auc(small_model(), dataset((np.zeros((0, FIELDS), np.int64), np.zeros((0, FIELDS), np.float32),
                                             np.zeros(0, np.float32))))

