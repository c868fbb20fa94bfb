"""The baselines: libsvm → TFRecord the way the AWS SageMaker DeepFM sample's converter does it, and raw
Criteo → TFRecord the way lambdaji's feature pipeline does (two passes of per-line Python).

One process, one `str.split` per line and per pair, one `tf.train.Example` per row, one writer, no
validation. Kept only so benchmarks/converter_speed.py can measure pipebench against them.
"""
from __future__ import annotations

import sys


def convert(input_path: str, output_path: str) -> int:
    """Convert one libsvm file; give the number of rows written."""
    import tensorflow as tf

    rows = 0
    with tf.io.TFRecordWriter(output_path) as writer:
        for line in open(input_path, "r"):
            data = line.split(" ")
            label = float(data[0])
            ids = []
            values = []
            for fea in data[1:]:
                feature_id, value = fea.split(":")
                ids.append(int(feature_id))
                values.append(float(value))
            example = tf.train.Example(features=tf.train.Features(feature={
                "label": tf.train.Feature(float_list=tf.train.FloatList(value=[label])),
                "ids": tf.train.Feature(int64_list=tf.train.Int64List(value=ids)),
                "values": tf.train.Feature(float_list=tf.train.FloatList(value=values)),
            }))
            writer.write(example.SerializeToString())
            rows += 1
    return rows


CLIP = [20, 600, 100, 50, 64000, 500, 100, 50, 500, 10, 10, 10, 50]


def convert_criteo(input_path: str, output_path: str, cutoff: int = 200) -> int:
    """Convert one raw Criteo file the way lambdaji's get_criteo_feature.py does, line by line, to
    TFRecord (with pipebench's documented id and value rules, so the outputs can be compared); give the rows."""
    import tensorflow as tf

    lows, highs = [None] * 13, [None] * 13
    counts = [{} for _ in range(26)]
    for line in open(input_path, "r"):
        features = line.rstrip("\n").split("\t")
        for i in range(13):
            if features[1 + i] != "":
                val = min(int(features[1 + i]), CLIP[i])
                lows[i] = val if lows[i] is None else min(lows[i], val)
                highs[i] = val if highs[i] is None else max(highs[i], val)
        for i in range(26):
            key = features[14 + i]
            if key != "":
                counts[i][key] = counts[i].get(key, 0) + 1
    dicts, offsets, offset = [], [], 14
    for i in range(26):
        kept = sorted((k for k, n in counts[i].items() if n >= cutoff), key=lambda k: (-counts[i][k], k))
        dicts.append({k: offset + 1 + rank for rank, k in enumerate(kept)})
        offsets.append(offset)
        offset += 1 + len(kept)
    rows = 0
    with tf.io.TFRecordWriter(output_path) as writer:
        for line in open(input_path, "r"):
            features = line.rstrip("\n").split("\t")
            ids, values = list(range(1, 14)), []
            for i in range(13):
                text, lo, hi = features[1 + i], lows[i], highs[i]
                if text == "" or lo is None or hi <= lo:
                    values.append(0.0)
                else:
                    values.append(min(1.0, max(0.0, (min(int(text), CLIP[i]) - lo) / (hi - lo))))
            for i in range(26):
                ids.append(dicts[i].get(features[14 + i], offsets[i]))
                values.append(1.0)
            example = tf.train.Example(features=tf.train.Features(feature={
                "label": tf.train.Feature(float_list=tf.train.FloatList(value=[float(features[0])])),
                "ids": tf.train.Feature(int64_list=tf.train.Int64List(value=ids)),
                "values": tf.train.Feature(float_list=tf.train.FloatList(value=values)),
            }))
            writer.write(example.SerializeToString())
            rows += 1
    return rows


if __name__ == "__main__":
    print(convert(sys.argv[1], sys.argv[2]))
