"""pipebench: benchmark and tune TensorFlow input pipelines for CTR training.

Importing this package is cheap: TensorFlow and numba load only in the modules that need them.
"""
__version__ = "0.1.0"
