"""libsvm → TFRecord (Example) / packed converters, and the inverse; no TensorFlow import here.

This module stays import-light (no numba, no numpy): the pipeline spec reads its tables too.
"""

COMPRESSIONS = ("none", "gzip", "zlib")
#: tf.data's `compression_type` value for each compression.
TF_COMPRESSION = {"none": "", "gzip": "GZIP", "zlib": "ZLIB"}
#: The converter's manifest beside its output shards: shard names, row counts and sha256.
MANIFEST = "manifest.json"
