"""deep_recommenders' first Criteo input flow: rows parsed in a Python generator, then split into 39 features.

Repository: LongmaoTeamTf/deep_recommenders
Path: deep_recommend/recommend/ctr/dataset/criteo.py
Commit: a83aa861fb5fd506254cf2baea7d9f9f222c3f05
Licence: MIT (the repository's LICENSE at that commit: Copyright (c) 2020 LongmaoTeamTf; notice kept below. The repository was relicensed Apache-2.0 in 2021.)
Style: Python-side parsing: Dataset.from_generator(open/readline/split('\t') per row) → map(tf.split into a dict of 39 [1]-shaped features: I1..I13 float32, C1..C26 string) → repeat(epochs) → batch → prefetch(batch_size); raw Kaggle Criteo rows.
Wiring changed: a module-level `input_fn(filepath, batch_size=128, epochs=10)` is added that builds `criteoDataFLow(filepath, batch_size, epochs)` and returns `create_criteo_dataset_from_generator()`, as the repository's scripts at that commit do (deep_recommend/recommend/ctr/trainner.py, dcn/train.py: `criteoDataFLow(data_path, batch_size=batch_size, epochs=1).create_criteo_dataset_from_generator()`). The class is verbatim (`filepath` is a list of paths: the generator loops over it).
"""
# ruff: noqa: E402 -- verbatim code: the original's second docstring precedes its imports
# MIT License
#
# Copyright (c) 2020 LongmaoTeamTf
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
# SOFTWARE.
"""
@Description: Criteo CTR dataset
@version: https://s3-eu-west-1.amazonaws.com/kaggle-display-advertising-challenge-dataset/dac.tar.gz
@License: MIT
@Author: Wang Yao
@Date: 2020-11-09 14:19:38
@LastEditors: Wang Yao
@LastEditTime: 2020-12-01 16:59:48
"""
import tensorflow as tf

CASE = {"format": "criteo", "files": "filepath", "kwargs": {"batch_size": 256, "epochs": 1}}


class criteoDataFLow():
    """ Criteo数据集输入数据流 """

    def __init__(self, filepath, batch_size=128, epochs=10):
        self._filepath = filepath
        self._batch_size = batch_size
        self._epochs = epochs
        self._integer_cols_num = 13
        self._categorical_cols_num = 26
        self.integer_cols_names = [f"I{i+1}" for i in range(self._integer_cols_num)]
        self.categorical_cols_names = [f"C{i+1}" for i in range(self._categorical_cols_num)]

    def create_criteo_generator(self):
        """创建Criteo数据迭代器"""
        for fn in self._filepath:
            with open(fn, "r", encoding="utf8") as f:
                for line in f:
                    instance = line.strip("\n").split("\t")
                    label = int(instance[0])
                    integer_cols = [-1 if x == "" else int(x) for x in instance[1:self._integer_cols_num+1]]
                    categorical_cols = instance[self._integer_cols_num+1:]
                    yield label, integer_cols, categorical_cols

    def criteo_data_format(self, label, integer_cols, categorical_cols):
        """数据格式转换"""
        integer_cols_tensor = tf.split(integer_cols, self._integer_cols_num, axis=-1)
        categorical_cols_tensor = tf.split(categorical_cols, self._categorical_cols_num, axis=-1)
        features = dict(zip(
            self.integer_cols_names + self.categorical_cols_names,
            integer_cols_tensor + categorical_cols_tensor
        ))
        return features, label

    def create_criteo_dataset_from_generator(self):
        """创建输入"""
        output_types = (tf.float32, tf.float32, tf.string)
        criteo_dataset = tf.data.Dataset.from_generator(self.create_criteo_generator, output_types)

        criteo_dataset = criteo_dataset.map(self.criteo_data_format)
        criteo_dataset = criteo_dataset.repeat(self._epochs)
        criteo_dataset = criteo_dataset.batch(self._batch_size)
        criteo_dataset = criteo_dataset.prefetch(self._batch_size)

        return criteo_dataset


def input_fn(filepath, batch_size=128, epochs=10):
    """Wiring: build the flow with keyword arguments and return its dataset."""
    return criteoDataFLow(filepath, batch_size=batch_size, epochs=epochs).create_criteo_dataset_from_generator()
