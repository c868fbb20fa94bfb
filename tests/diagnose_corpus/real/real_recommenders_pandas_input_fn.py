"""Recommenders' pandas input function for its TF Estimator models (recommenders.utils.tf_utils.pandas_input_fn).

Repository: recommenders-team/recommenders (formerly microsoft/recommenders)
Path: recommenders/utils/tf_utils.py
Commit: b02c95e2b98b961f9943ce561bbb03f8dff2f41f
Licence: MIT (the repository's LICENSE at that commit: Copyright (c) 2018-present Microsoft Corporation, Copyright (c) 2023-present Recommenders contributors; and the file's header; notice kept below)
Style: in-memory DataFrame: the label column popped, every column's numpy values into a dict → Dataset.from_tensor_slices((dict, labels)) → shuffle(1000, seed, reshuffle_each_iteration=True) (when shuffle) → repeat(num_epochs) → batch(batch_size); a dict of 39 scalar columns (I1..I13 float64 with NaN where empty, C1..C26 string), label int64.
Wiring changed: a module-level `input_fn(filenames, batch_size=128, num_epochs=1, shuffle=False, seed=None)` is added that reads the Criteo files into one DataFrame with pandas (as the repository's notebooks load MovieLens into a DataFrame before calling it: examples/00_quick_start/wide_deep_movielens.ipynb, `tf_utils.pandas_input_fn(df=train, y_col=RATING_COL, batch_size=BATCH_SIZE, num_epochs=None, shuffle=True, seed=RANDOM_SEED)`), then calls `pandas_input_fn(df, y_col='label', ...)` and the function it returns (the Estimator calls it). The read keeps empty categorical fields as '' (object columns) and empty integer fields as NaN. `pandas_input_fn` and `_dataset` are verbatim; the module's other helpers (SavedModel export, optimizers, hooks) and its tensorflow_estimator import are left out.
"""
# ruff: noqa: B028 -- verbatim code (warnings.warn without stacklevel)
# MIT License
#
# Copyright (c) 2018-present Microsoft Corporation.
# Copyright (c) 2023-present Recommenders contributors.
#
# Permission is hereby granted, free of charge, to any person obtaining a copy
# of this software and associated documentation files (the "Software"), to deal
# in the Software without restriction, including without limitation the rights
# to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
# copies of the Software, and to permit persons to whom the Software is
# furnished to do so, subject to the following conditions:
#
# The above copyright notice and this permission notice shall be included in all
# copies or substantial portions of the Software.
#
# THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
# IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
# FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
# AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
# LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
# OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
# SOFTWARE

# Copyright (c) Recommenders contributors.
# Licensed under the MIT License.

import numpy as np
import pandas as pd
import tensorflow as tf

CASE = {"format": "criteo", "files": "filenames", "kwargs": {"batch_size": 256, "num_epochs": 1, "shuffle": True,
                                                             "seed": 42}}


def pandas_input_fn(
    df, y_col=None, batch_size=128, num_epochs=1, shuffle=False, seed=None
):
    """Pandas input function for TensorFlow high-level API Estimator.
    This function returns a `tf.data.Dataset` function.

    Note:
        `tf.estimator.inputs.pandas_input_fn` cannot handle array/list column properly.
        For more information, see https://www.tensorflow.org/api_docs/python/tf/estimator/inputs/numpy_input_fn

    Args:
        df (pandas.DataFrame): Data containing features.
        y_col (str): Label column name if df has it.
        batch_size (int): Batch size for the input function.
        num_epochs (int): Number of epochs to iterate over data. If `None`, it will run forever.
        shuffle (bool): If True, shuffles the data queue.
        seed (int): Random seed for shuffle.

    Returns:
        tf.data.Dataset: Function.
    """

    X_df = df.copy()
    if y_col is not None:
        y = X_df.pop(y_col).values
    else:
        y = None

    X = {}
    for col in X_df.columns:
        values = X_df[col].values
        if isinstance(values[0], (list, np.ndarray)):
            values = np.array(values.tolist(), dtype=np.float32)
        X[col] = values

    return lambda: _dataset(
        x=X,
        y=y,
        batch_size=batch_size,
        num_epochs=num_epochs,
        shuffle=shuffle,
        seed=seed,
    )


def _dataset(x, y=None, batch_size=128, num_epochs=1, shuffle=False, seed=None):
    if y is None:
        dataset = tf.data.Dataset.from_tensor_slices(x)
    else:
        dataset = tf.data.Dataset.from_tensor_slices((x, y))

    if shuffle:
        dataset = dataset.shuffle(
            1000, seed=seed, reshuffle_each_iteration=True  # buffer size = 1000
        )
    elif seed is not None:
        import warnings

        warnings.warn("Seed was set but `shuffle=False`. Seed will be ignored.")

    return dataset.repeat(num_epochs).batch(batch_size)


# --- wiring: the caller's DataFrame, read from raw Kaggle Criteo files
CRITEO_COLUMNS = ['label'] + ['I%d' % i for i in range(1, 14)] + ['C%d' % i for i in range(1, 27)]


def input_fn(filenames, batch_size=128, num_epochs=1, shuffle=False, seed=None):
    """Wiring: load the files into a DataFrame, then call pandas_input_fn(...) and the function it returns."""
    df = pd.concat([pd.read_csv(name, sep='\t', header=None, names=CRITEO_COLUMNS,
                                dtype={c: object for c in CRITEO_COLUMNS[14:]}, keep_default_na=False,
                                na_values={c: [''] for c in CRITEO_COLUMNS[1:14]})
                    for name in filenames], ignore_index=True)
    return pandas_input_fn(df, y_col='label', batch_size=batch_size, num_epochs=num_epochs, shuffle=shuffle,
                           seed=seed)()
