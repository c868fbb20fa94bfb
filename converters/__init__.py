"""libsvm → TFRecord (Example) / packed converters, and the inverse; no TensorFlow import here."""
