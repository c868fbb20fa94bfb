"""TensorFlow Recommenders' basic ranking tutorial pipeline: map → seeded shuffle → take → shuffle → batch → cache.

Repository: tensorflow/recommenders
Path: docs/examples/basic_ranking.ipynb
Commit: cf1dafa988f223ed5f30b68cb9aed518484b3a1d
Licence: Apache-2.0 (the repository's LICENSE at that commit, and the notebook's own header cell: Copyright 2020 The TensorFlow Authors, Licensed under the Apache License 2.0; kept below)
Style: one pass ending in cache(): ratings.map(dict of movie_title, user_id, user_rating) → shuffle(100_000, seed=42, reshuffle_each_iteration=False) → take(80_000) (the train split) → shuffle(100_000) → batch(8192) → cache(); no repeat (model.fit(cached_train, epochs=3) reads the cache on later epochs); elements are dicts of [B] string, string, float32 (the model pops user_rating as the label); tf.random.set_seed(42) is set as the notebook does.
Wiring changed: (1) the source: the notebook reads `tfds.load("movielens/100k-ratings", split="train")`; here `_ratings(filenames)` reads the Criteo files with tf.data.experimental.CsvDataset (tab-separated; columns label, C1 and C2) and gives the same element keys the notebook's map reads: `user_rating` = the label (float32), `user_id` = C1, `movie_title` = C2 (strings); (2) the notebook's cells (ratings map: cell 8; split: cell 10; shuffle/batch/cache: cell 26) are the body of a module-level `input_fn(filenames)` that returns `cached_train` (what model.fit reads); they are verbatim, `cached_test` included. The vocabularies, models and training are left out.
"""
# ruff: noqa: F841 -- verbatim cells: cached_test is built as the notebook builds it
#@title Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
# https://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
import tensorflow as tf

CASE = {"format": "criteo", "files": "filenames", "kwargs": {}}


def _ratings(filenames):
  """Wiring: stands in for tfds.load("movielens/100k-ratings", split="train"): the fields the notebook reads."""
  rows = tf.data.experimental.CsvDataset(filenames, [0.0, '', ''], field_delim='\t', select_cols=[0, 14, 15])
  return rows.map(lambda label, c1, c2: {"user_rating": label, "user_id": c1, "movie_title": c2})


def input_fn(filenames):
  """Wiring: the notebook's cells 8, 10 and 26 on these files; gives cached_train."""
  ratings = _ratings(filenames)  # wiring: was tfds.load("movielens/100k-ratings", split="train")

  ratings = ratings.map(lambda x: {
      "movie_title": x["movie_title"],
      "user_id": x["user_id"],
      "user_rating": x["user_rating"]
  })

  tf.random.set_seed(42)
  shuffled = ratings.shuffle(100_000, seed=42, reshuffle_each_iteration=False)

  train = shuffled.take(80_000)
  test = shuffled.skip(80_000).take(20_000)

  cached_train = train.shuffle(100_000).batch(8192).cache()
  cached_test = test.batch(4096).cache()
  return cached_train
