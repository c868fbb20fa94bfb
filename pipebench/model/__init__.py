"""The DeepFM model the train and synthetic modes run (pipebench.model.deepfm imports TensorFlow).

This package module stays TensorFlow-free so the config loader can validate names against it.
"""
from __future__ import annotations

#: Optimizer names make_train_step accepts (case-insensitive), as both Keras 2 and Keras 3 offer them.
#: "momentum" is the AWS sample's Momentum optimizer: SGD with momentum 0.95.
OPTIMIZERS = ("adam", "adagrad", "ftrl", "momentum", "rmsprop", "sgd")
