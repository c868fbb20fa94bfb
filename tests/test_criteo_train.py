"""Raw Criteo rows, converted, train: the planted model's raw rows through `convert --from criteo` and the
aws-sample pipeline into the project's DeepFM, scored on held-out raw rows mapped by the saved feature map."""
from __future__ import annotations

import itertools

import pytest
from lazy import lazy

from pipebench.converters import criteo
from pipebench.converters.convert import ConvertRequest, convert
from pipebench.pipeline.presets import preset
from pipebench.synth import SynthSpec, synthesize

pytestmark = pytest.mark.tf
tf = lazy("tensorflow")
build = lazy("pipebench.measure.build", "build")
deepfm = lazy("pipebench.model.deepfm")

ROWS = 20_000
HELD_OUT = 4_000
BATCH = 256


def test_converted_raw_criteo_trains_towards_the_oracle_auc(tmp_path):
    described = synthesize(SynthSpec(rows=ROWS, out=tmp_path / "raw", format="criteo", feature_size=2000, seed=1))
    synthesize(SynthSpec(rows=HELD_OUT, out=tmp_path / "raw-held", format="criteo", feature_size=2000, seed=1,
                         stream=1))
    manifest = convert(ConvertRequest(inputs=tuple((tmp_path / "raw").glob("part-*")), out=tmp_path / "train",
                                      from_format="criteo", cutoff=5))
    convert(ConvertRequest(inputs=tuple((tmp_path / "raw-held").glob("part-*")), out=tmp_path / "held",
                           from_format="criteo", feature_map=tmp_path / "train" / criteo.FEATURE_MAP_FILE))

    def dataset(folder, epochs):
        files = tuple(str(p) for p in sorted(folder.glob("part-*")))
        return build(preset("aws-sample", files=files, batch_size=BATCH, epochs=epochs)).dataset

    model = deepfm.build_deepfm(criteo.FIELD_SIZE, manifest.feature_size, embedding_size=8, deep_layers=(32, 16))
    step = deepfm.make_train_step(model)
    auc_before = deepfm.evaluate_auc(model, dataset(tmp_path / "held", 1))
    for features, labels in itertools.islice(iter(dataset(tmp_path / "train", None)), 300):
        loss = step(features, labels)
    auc_after = deepfm.evaluate_auc(model, dataset(tmp_path / "held", 1))
    assert tf.math.is_finite(loss)
    assert abs(auc_before - 0.5) < 0.05
    assert 0.65 < auc_after < described.oracle_auc + 0.02
