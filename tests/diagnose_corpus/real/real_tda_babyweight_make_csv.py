"""Training Data Analyst's babyweight trainer: a library reader, tf.data.experimental.make_csv_dataset.

Repository: GoogleCloudPlatform/training-data-analyst
Path: courses/machine_learning/deepdive2/end_to_end_ml/solutions/babyweight/trainer/model.py
Commit: a3083130c24bbce167714c8630eaf21598c9c9a7 (the file last changed in 928dc1676767ecd13edd940285804cc29ec76de1)
Licence: Apache-2.0 (the repository's LICENSE at that commit; the file carries no header)
Style: one library reader and a label pop: make_csv_dataset(pattern, batch_size, column_names, column_defaults)
with its defaults (shuffle=True, shuffle_buffer_size=10,000, num_epochs=None: it repeats forever, header=True) →
map(features_and_labels: the label popped from the OrderedDict) → shuffle(1000).repeat() (mode 'train') →
prefetch(1); elements (OrderedDict of 39 [B] columns, label [B]).
Wiring changed: (1) CSV_COLUMNS, LABEL_COLUMN and DEFAULTS adapted to raw Kaggle Criteo rows: the columns label,
I1..I13, C1..C26, LABEL_COLUMN 'label', DEFAULTS `[0.0]` for the label and the integer columns (the babyweight
label and numeric columns are floats) and `["null"]` for the categorical ones (the babyweight string columns'
default); (2) `field_delim='\t'` and `header=False` added to the make_csv_dataset call (the babyweight CSVs are
comma-separated; make_csv_dataset's default `header=True` would drop each Criteo file's first row); (3) a module-level `input_fn(pattern, batch_size=512, mode='train')` calls
`load_dataset` as `train_and_evaluate` does (`load_dataset(args["train_data_path"], args["batch_size"],
tf.estimator.ModeKeys.TRAIN)`, whose value is 'train'; task.py's default batch size 512). The model, its inputs and
feature columns and train_and_evaluate are left out; `features_and_labels` and `load_dataset` are otherwise
verbatim.
"""
import tensorflow as tf

CASE = {"format": "criteo", "files": "pattern", "kwargs": {"batch_size": 512, "mode": "train"}}

# Determine CSV, label, and key columns
# wiring: the Criteo columns (the original's are the babyweight ones)
CSV_COLUMNS = ["label"] + ["I%d" % i for i in range(1, 14)] + ["C%d" % i for i in range(1, 27)]
LABEL_COLUMN = "label"

# Set default values for each CSV column.
# Treat is_male and plurality as strings.
DEFAULTS = [[0.0]] * 14 + [["null"]] * 26  # wiring: the Criteo columns' defaults


def features_and_labels(row_data):
    """Splits features and labels from feature dictionary.

    Args:
        row_data: Dictionary of CSV column names and tensor values.
    Returns:
        Dictionary of feature tensors and label tensor.
    """
    label = row_data.pop(LABEL_COLUMN)

    return row_data, label  # features, label


def load_dataset(pattern, batch_size=1, mode='eval'):
    """Loads dataset using the tf.data API from CSV files.

    Args:
        pattern: str, file pattern to glob into list of files.
        batch_size: int, the number of examples per batch.
        mode: 'eval' | 'train' to determine if training or evaluating.
    Returns:
        `Dataset` object.
    """
    print("mode = {}".format(mode))
    # Make a CSV dataset
    dataset = tf.data.experimental.make_csv_dataset(
        file_pattern=pattern,
        batch_size=batch_size,
        column_names=CSV_COLUMNS,
        column_defaults=DEFAULTS,
        field_delim='\t', header=False)  # wiring: Criteo rows are tab-separated, without a header

    # Map dataset to features and label
    dataset = dataset.map(map_func=features_and_labels)  # features, label

    # Shuffle and repeat for training
    if mode == 'train':
        dataset = dataset.shuffle(buffer_size=1000).repeat()

    # Take advantage of multi-threading; 1=AUTOTUNE
    dataset = dataset.prefetch(buffer_size=1)

    return dataset


def input_fn(pattern, batch_size=512, mode='train'):
    """Wiring: what train_and_evaluate does: load_dataset(train_data_path, batch_size, ModeKeys.TRAIN)."""
    return load_dataset(pattern, batch_size, mode)
