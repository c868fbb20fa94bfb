"""Hands-On ML 2's CSV reader (chapter 13): per-line parse after a shuffle of the interleaved lines.

Repository: ageron/handson-ml2
Path: 13_loading_and_preprocessing_data.ipynb (cells 41 and 43: `preprocess`, `csv_reader_dataset`)
Commit: 1e2115277b50f6c584cd668fa30e3af309a5b136 (the notebook last changed in
9e1b7cb484751295537f25cd7c3c26cd61cb1e37)
Licence: Apache-2.0 (the repository's LICENSE at that commit; the notebook carries no header)
Style: classic per-line text reader, shuffled before the per-line parse: list_files(filepaths) (shuffled, the
default) → repeat(repeat) → interleave(TextLineDataset(file).skip(1), cycle 5, num_parallel_calls n_read_threads
(None: sequential)) → shuffle(10,000) → map(@tf.function preprocess: decode_csv of one line → stack → standardize
with the training set's mean and scale, 5) → batch(32) → prefetch(1); elements (x [B, 13] float32, y [B, 1]
float32).
Wiring changed: (1) `write_numeric_csv(files, folder)` (CASE `derived`) writes the notebook's CSV layout from the raw
Criteo rows, as its `save_to_multiple_csv_files` does for California housing (a header line, then the features and
last the target, comma-separated, floats written with repr, the rows split into 20 files): the features are I1..I13
(empty → 0), the target the click label; (2) `n_inputs` 8 (California housing's features) → 13; (3) `X_mean` and
`X_std`, which the notebook takes from a StandardScaler fitted on the training set (cell 19), are computed from the
files by `input_fn` with NumPy (mean and population standard deviation, what `scaler.mean_` and `scaler.scale_`
are), before it calls `csv_reader_dataset(filepaths, ...)` with its own arguments, as cells 44–45 do. `preprocess`
and `csv_reader_dataset` are verbatim.
"""
import os

import numpy as np
import tensorflow as tf

CASE = {"format": "criteo", "files": "filepaths", "derived": "write_numeric_csv", "kwargs": {}}

# --- wiring: the scaler statistics of cell 19, set by input_fn from the files it reads
X_mean = None
X_std = None

n_inputs = 13  # wiring: was 8 (California housing's features), X_train.shape[-1]


@tf.function
def preprocess(line):
    defs = [0.] * n_inputs + [tf.constant([], dtype=tf.float32)]
    fields = tf.io.decode_csv(line, record_defaults=defs)
    x = tf.stack(fields[:-1])
    y = tf.stack(fields[-1:])
    return (x - X_mean) / X_std, y


def csv_reader_dataset(filepaths, repeat=1, n_readers=5,
                       n_read_threads=None, shuffle_buffer_size=10000,
                       n_parse_threads=5, batch_size=32):
    dataset = tf.data.Dataset.list_files(filepaths).repeat(repeat)
    dataset = dataset.interleave(
        lambda filepath: tf.data.TextLineDataset(filepath).skip(1),
        cycle_length=n_readers, num_parallel_calls=n_read_threads)
    dataset = dataset.shuffle(shuffle_buffer_size)
    dataset = dataset.map(preprocess, num_parallel_calls=n_parse_threads)
    dataset = dataset.batch(batch_size)
    return dataset.prefetch(1)


def write_numeric_csv(files, folder, n_parts=20):
    """Wiring: the notebook's CSV layout (save_to_multiple_csv_files) of the raw Criteo rows in `files`, written into
    `folder`; give the files written."""
    data = []
    for path in files:
        with open(path) as f:
            for line in f:
                fields = line.rstrip("\n").split("\t")
                data.append([float(v) if v else 0.0 for v in fields[1:1 + n_inputs]] + [float(fields[0])])
    header = ",".join([f"I{i}" for i in range(1, n_inputs + 1)] + ["label"])
    filepaths = []
    for file_idx, row_indices in enumerate(np.array_split(np.arange(len(data)), n_parts)):
        part_csv = os.path.join(folder, "my_train_{:02d}.csv".format(file_idx))
        filepaths.append(part_csv)
        with open(part_csv, "wt", encoding="utf-8") as f:
            f.write(header)
            f.write("\n")
            for row_idx in row_indices:
                f.write(",".join([repr(col) for col in data[row_idx]]))
                f.write("\n")
    return filepaths


def input_fn(filepaths, repeat=1, n_readers=5, n_read_threads=None, shuffle_buffer_size=10000, n_parse_threads=5,
             batch_size=32):
    """Wiring: fit the scaler's statistics on the files (cell 19), then call csv_reader_dataset (cells 44–45)."""
    global X_mean, X_std
    X_train = np.concatenate([np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)[:, :n_inputs]
                              for path in filepaths])
    X_mean = X_train.mean(axis=0)
    X_std = X_train.std(axis=0)
    X_std[X_std == 0] = 1.0  # StandardScaler's scale_ for a constant feature
    return csv_reader_dataset(filepaths, repeat=repeat, n_readers=n_readers, n_read_threads=n_read_threads,
                              shuffle_buffer_size=shuffle_buffer_size, n_parse_threads=n_parse_threads,
                              batch_size=batch_size)
