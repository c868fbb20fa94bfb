"""The choices of experiment keys that the layers above act on: what a trial measures, the environment it may
set, where the model trains.

They live here, below measure/, because the experiment file offers them (config checks a key against its
choices) and the trial records, the worker, the search and the reports read the same tuples.
"""

#: What a trial measures: the pipeline alone, the DeepFM step on it, or the step on one in-memory batch.
TRIAL_MODES = ("input", "train", "synthetic")
#: The environment variables a trial may set before TensorFlow starts (see measure.manager).
ENV_KNOBS = ("OMP_NUM_THREADS", "KMP_AFFINITY", "KMP_BLOCKTIME", "KMP_SETTINGS", "TF_ENABLE_ONEDNN_OPTS")
#: `measurement.trainer`: where the model the verdict speaks for trains. auto: where the train step ran here.
TRAINERS = ("auto", "cpu", "accelerator")
