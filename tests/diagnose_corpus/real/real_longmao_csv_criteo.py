"""deep_recommenders' CSV dataset class (TfDatasetCSV) configured by its criteo.yml, for DeepFM / DCN / xDeepFM on Criteo.

Repository: LongmaoTeamTf/deep_recommenders
Path: deep_recommend/recommend/ctr/dataset/dataset.py
Commit: 7c5bf747f3345a13cd464b8f7d3a030908f5db6e
Licence: MIT (the repository's LICENSE at that commit: Copyright (c) 2020 LongmaoTeamTf; notice kept below. The repository was relicensed Apache-2.0 in 2021.)
Style: a dict of 39 scalar features per line: list_files → interleave(TextLineDataset(fp).skip(n)) → map(decode_csv(select_cols, field_delim='\t') → {'I1'..'I13': int32, 'C1'..'C26': string}, label) → batch → prefetch(batch_size); raw Kaggle Criteo rows, tab-separated, as the repository's criteo.yml describes them.
Wiring changed: (1) the values run.py reads from deep_recommend/recommend/ctr/dataset/criteo.yml (same commit) and passes to TfDatasetCSV are module constants here (CRITEO_HEADER, CRITEO_SELECT_INDEXS, CRITEO_SELECT_DEFS, label_index 0, batch_size 512, skip_head_lines 0, field_delim "\t", na_value ""), split on "," as run.py splits them; (2) a module-level `input_fn(filenames, batch_size=512, ...)` builds TfDatasetCSV as run.py does and returns the dataset of the (dataset, steps) pair its __call__ returns (steps, counted with `wc -l`, goes to the trainer). The class is verbatim.
"""
# ruff: noqa: E402, W291, W293 -- verbatim code: the original's second docstring precedes its imports; its trailing spaces
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
@Description: 
@version: 
@License: MIT
@Author: Wang Yao
@Date: 2020-12-02 15:13:59
@LastEditors: Wang Yao
@LastEditTime: 2020-12-02 19:02:47
"""
import os
import tensorflow as tf

CASE = {"format": "criteo", "files": "filenames", "kwargs": {"batch_size": 256}}

# wiring: criteo.yml's `dataset:` section (same commit)
CRITEO_HEADER = "label,I1,I2,I3,I4,I5,I6,I7,I8,I9,I10,I11,I12,I13,C1,C2,C3,C4,C5,C6,C7,C8,C9,C10,C11,C12,C13,C14,C15,C16,C17,C18,C19,C20,C21,C22,C23,C24,C25,C26"
CRITEO_SELECT_INDEXS = "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39"
CRITEO_SELECT_DEFS = "F,I,I,I,I,I,I,I,I,I,I,I,I,I,S,S,S,S,S,S,S,S,S,S,S,S,S,S,S,S,S,S,S,S,S,S,S,S,S,S"


class TfDatasetCSV(object):
    """ Tensorflow Dataset """

    __float32__ = tf.constant(0, dtype=tf.float32)
    __int32__ = tf.constant(0, dtype=tf.int32)
    __string__ = tf.constant("", dtype=tf.string)

    def __init__(self, 
                 csv_header: str, 
                 select_cols_indexs: list,
                 select_cols_defs: list,
                 label_column_index: int,
                 batch_size: int, 
                 skip_head_lines: int=1,
                 field_delim=",",
                 na_value="",
                 **kwargs):
        super(TfDatasetCSV, self).__init__(**kwargs)
        self._csv_header = csv_header
        self._select_cols_indexs = self.parse_select_indexs(select_cols_indexs)
        self._select_cols_defs = self.parse_select_defs(select_cols_defs)
        self._label_column_index = label_column_index
        self._batch_size = batch_size
        self._skip_head_lines = skip_head_lines
        self._field_delim = field_delim
        self._na_value = na_value

    def __call__(self, filenames):
        """ 生成数据集 """
        dataset = self.get_dataset_from_txts(filenames, self.parse_line)
        steps = self.calc_steps(filenames)
        return dataset, steps

    def calc_steps(self, filenames):
        """ 计算迭代步数 """
        total_num = 0
        for fn in filenames:
            cmd = "wc -l < {}".format(fn)
            cmd_res = os.popen(cmd)
            num_lines = int(cmd_res.read().strip())
            num_lines -= self._skip_head_lines
            total_num += num_lines
        steps = total_num // self._batch_size
        return steps
    
    def parse_select_indexs(self, indexs):
        return [int(i) for i in indexs]

    def parse_select_defs(self, defs):
        select_defs = []
        for default in defs:
            if default == "F":
                select_defs.append(self.__float32__)
            elif default == "I":
                select_defs.append(self.__int32__)
            elif default == "S":
                select_defs.append(self.__string__)
            else:
                select_defs.append(self.__string__)
        return select_defs

    def parse_line(self, csv_line):
        """ 解析数据 """
        parsed_columns = tf.io.decode_csv(
            csv_line,
            self._select_cols_defs,
            select_cols=self._select_cols_indexs,
            field_delim=self._field_delim,
            na_value=self._na_value
        )
        features = {
            self._csv_header[i]: col
            for i, col in zip(self._select_cols_indexs, parsed_columns)
            if i != self._label_column_index
        }
        labels = tf.stack(parsed_columns[
            self._select_cols_indexs.index(self._label_column_index)])
        return features, labels

    def get_dataset_from_txts(self, filenames: list, parser_func):
        """ 构建文本文件数据集 """
        list_ds = tf.data.Dataset.list_files(filenames)
        dataset = list_ds.interleave(
            lambda fp: tf.data.TextLineDataset(fp).skip(self._skip_head_lines),
        )
        dataset = dataset.map(map_func=parser_func)
        dataset = dataset.batch(self._batch_size)
        dataset = dataset.prefetch(self._batch_size)
        return dataset


def input_fn(filenames, batch_size=512, label_index=0, skip_head_lines=0, field_delim="\t", na_value=""):
    """Wiring: run.py's construction of TfDatasetCSV from criteo.yml, then its call on the file list."""
    dataseter = TfDatasetCSV(
        CRITEO_HEADER.split(","),
        CRITEO_SELECT_INDEXS.split(","),
        CRITEO_SELECT_DEFS.split(","),
        label_index,
        batch_size,
        skip_head_lines,
        field_delim=field_delim,
        na_value=na_value
    )
    dataset, _steps = dataseter(filenames)
    return dataset
