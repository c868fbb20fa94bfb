"""SparrowRecSys's Wide & Deep reader: tf.data.experimental.make_csv_dataset, label popped by make_csv_dataset.

Repository: wzhe06/SparrowRecSys
Path: TFRecModel/src/com/sparrowrecsys/offline/tensorflow/WideNDeep.py
Commit: 579577c9a25f75fc6bbdfeb2f258f7c8a35833dd
Licence: Apache-2.0 (the repository's LICENSE at that commit; the file carries no header)
Style: one library reader: make_csv_dataset(batch_size=12, label_name='label', na_value="0", num_epochs=1, ignore_errors=True) with its defaults (shuffle=True, shuffle_buffer_size=10000, header=True, column types inferred from the first 100 rows), whose elements are (OrderedDict of 39 [12] columns, label [12]); EmbeddingMLP.py, DeepFM.py and NeuralCF.py in the same folder have the same get_dataset.
Wiring changed: CSV layout adapted to raw Kaggle Criteo rows: `column_names` (label, I1..I13, C1..C26), `column_defaults` (`0` for the label and the integer columns, `''` for the categorical ones, in place of inference: an all-digit hex string would make inference call a column numeric), `field_delim='\t'` and `header=False` are added to the call (SparrowRecSys's trainingSamples.csv has a header row naming its columns, with `label` among them, and is comma-separated). The module-level `tf.keras.utils.get_file` calls that fetch the sample CSVs and the Keras model are left out; `get_dataset` is renamed `input_fn` and its `file_path` takes the list of files (make_csv_dataset takes a list).
"""
import tensorflow as tf

CASE = {"format": "criteo", "files": "file_path", "kwargs": {}}

# wiring: Criteo's columns (the original infers them from the CSV header)
CRITEO_COLUMNS = ['label'] + ['I%d' % i for i in range(1, 14)] + ['C%d' % i for i in range(1, 27)]
CRITEO_DEFAULTS = [0] * 14 + [''] * 26


# load sample as tf dataset
def input_fn(file_path):  # wiring: was get_dataset(file_path)
    dataset = tf.data.experimental.make_csv_dataset(
        file_path,
        batch_size=12,
        label_name='label',
        na_value="0",
        num_epochs=1,
        ignore_errors=True,
        column_names=CRITEO_COLUMNS, column_defaults=CRITEO_DEFAULTS,  # wiring: Criteo layout
        field_delim='\t', header=False)
    return dataset
