"""The TensorFlow functions an exported input_fn copies verbatim: list_files, the decoders and apply_options; and
the batch functions a rewritten user pipeline maps with (vectorized, libsvm_batch_decoder: pipebench.measure.build).

They use nothing but `tf` and their arguments: pipebench.pipeline.export reads this file as text (exporting
never imports TensorFlow) and copies them into the modules it writes, and the builder
(pipebench.measure.build) calls the same functions, so exported input_fns decode exactly as the builder does.
"""
import tensorflow as tf


def list_files(patterns):
    """Give the files matching each path or glob (a str is one glob), in order, each glob's matches sorted."""
    if isinstance(patterns, str):
        patterns = [patterns]
    files = []
    for pattern in patterns:
        matches = sorted(tf.io.gfile.glob(pattern))
        if not matches:
            raise FileNotFoundError(f"pattern {pattern!r} matches no file")
        files.extend(matches)
    return files


def libsvm_decoder(field_size):
    """Give decode(lines string[N]) for `label id:value ...` lines: two splits for the whole batch."""
    def decode(lines):
        tokens = tf.strings.split(lines, " ")
        check = tf.debugging.assert_equal(tokens.row_lengths(), tf.constant(field_size + 1, tf.int64),
                                          message="a libsvm line does not hold field_size id:value pairs")
        with tf.control_dependencies([check]):
            columns = tf.reshape(tokens.flat_values, [-1, field_size + 1])
        pairs = tf.reshape(tf.strings.split(columns[:, 1:], ":").flat_values, [-1, field_size, 2])
        labels = tf.strings.to_number(columns[:, 0], tf.float32)
        ids = tf.strings.to_number(pairs[:, :, 0], tf.int64)
        values = tf.strings.to_number(pairs[:, :, 1], tf.float32)
        labels.set_shape([lines.shape[0]])
        ids.set_shape([lines.shape[0], field_size])
        values.set_shape([lines.shape[0], field_size])
        return {"feat_ids": ids, "feat_vals": values}, labels
    return decode


def example_decoder(field_size, single):
    """Give decode(serialized Example) for the AWS sample's schema; `single`: one record, not a batch."""
    features = {
        "label": tf.io.FixedLenFeature([], tf.float32),
        "ids": tf.io.FixedLenFeature([field_size], tf.int64),
        "values": tf.io.FixedLenFeature([field_size], tf.float32),
    }

    def decode(serialized):
        parse = tf.io.parse_single_example if single else tf.io.parse_example
        parsed = parse(serialized, features)
        return {"feat_ids": parsed["ids"], "feat_vals": parsed["values"]}, parsed["label"]
    return decode


def packed_decoder(field_size, rows_per_record):
    """Give decode(records string[N]) → all their rows, with one decode_raw.

    Row layout: word 0 label (float32 bits), words 1..F ids (int32), words F+1..2F values (float32
    bits), little-endian. A short record (the data set's last) is zero-padded by decode_raw's
    fixed_length and its padding rows masked away.
    """
    row_words = 1 + 2 * field_size
    row_bytes = 4 * row_words
    record_bytes = row_bytes * rows_per_record

    def decode(records):
        lengths = tf.strings.length(records)
        checks = [
            tf.debugging.assert_equal(lengths % row_bytes, 0,
                                      message="packed record is not whole rows: is field_size right?"),
            tf.debugging.assert_less_equal(lengths, record_bytes,
                                           message="packed record holds more rows than rows_per_record"),
        ]
        with tf.control_dependencies(checks):
            words = tf.io.decode_raw(records, tf.int32, fixed_length=record_bytes)
        rows = tf.reshape(words, [-1, row_words])
        rows = tf.cond(
            tf.reduce_all(tf.equal(lengths, record_bytes)),
            lambda: rows,
            lambda: tf.boolean_mask(rows, tf.reshape(tf.sequence_mask(lengths // row_bytes, rows_per_record), [-1])),
        )
        labels = tf.bitcast(rows[:, 0], tf.float32)
        ids = tf.cast(rows[:, 1:field_size + 1], tf.int64)
        values = tf.bitcast(rows[:, field_size + 1:], tf.float32)
        return {"feat_ids": ids, "feat_vals": values}, labels
    return decode


def scalar_decoder(decode):
    """Give a one-row decoder from a batch decoder: the same parsing, called once per row."""
    def decode_one(record):
        features, label = decode(tf.expand_dims(record, 0))
        return {name: column[0] for name, column in features.items()}, label[0]
    return decode_one


def apply_options(dataset, settings):
    """Give (dataset with tf.data.Options set, names this TensorFlow lacks); probes, never fails."""
    options = tf.data.Options()
    unsupported = []
    for path, value in settings.items():
        *groups, name = path.split(".")
        target = options
        for group in groups:
            target = getattr(target, group, None)
        if target is None or not hasattr(target, name):
            unsupported.append(path)
            continue
        setattr(target, name, value)
    return dataset.with_options(options), unsupported


def batched_parse(function):
    """Give a batch function: `function`, written for one serialized tf.train.Example, traced with
    tf.io.parse_single_example standing for tf.io.parse_example, so that it parses a whole batch in one op (what
    pipebench diagnose checked gives the per-example values on a sample and the same rows)."""
    def parse_batch(serialized, features, example_names=None, name=None):
        return tf.io.parse_example(serialized, features, example_names, name)

    def batch_function(*args):
        spots = [(tf.io, "parse_single_example"), (tf.compat.v1, "parse_single_example"),
                 (tf.compat.v1.io, "parse_single_example")]
        saved = [getattr(owner, attribute) for owner, attribute in spots]
        for owner, attribute in spots:
            setattr(owner, attribute, parse_batch)
        try:
            return function(*args)
        finally:
            for (owner, attribute), value in zip(spots, saved):
                setattr(owner, attribute, value)
    return batch_function


def pipebench_make_csv_dataset(file_pattern, batch_size, column_names=None, column_defaults=None, label_name=None,
                               select_columns=None, field_delim=",", use_quote_delim=True, na_value="", header=True,
                               num_epochs=None, shuffle=True, shuffle_buffer_size=10000, shuffle_seed=None,
                               prefetch_buffer_size=None, num_parallel_reads=None, sloppy=False,
                               num_rows_for_inference=100, compression_type=None, ignore_errors=False,
                               encoding="utf-8", *, drop_remainder=None):
    """Give what tf.data.experimental.make_csv_dataset gives, its CSV parsed a batch at a time (pipebench
    diagnose's rewrite): each file's lines are read (its header skipped), shuffled, repeated and batched as
    make_csv_dataset does its rows, then one tf.io.decode_csv parses the batch; make_csv_dataset's CsvDataset parses
    every row alone. The columns, their types and the rows are TensorFlow's own (its readers' helpers infer them);
    a line that fails to parse fails its batch (ignore_errors dropped that row alone), and a quoted field holding a
    line break is two lines here. `drop_remainder` None drops a last partial batch as make_csv_dataset does (when
    it repeats forever); diagnose's content check reads one epoch of an endless one with it True."""
    import collections
    import gzip

    from tensorflow.python.data.experimental.ops import readers

    reads = 1 if num_parallel_reads is None else num_parallel_reads
    filenames = readers._get_file_names(file_pattern, False)
    dataset = tf.data.Dataset.from_tensor_slices(filenames)
    if shuffle:
        dataset = dataset.shuffle(len(filenames), shuffle_seed)
    gzipped = compression_type is not None and tf.get_static_value(tf.constant(compression_type)) in (b"GZIP", "GZIP")

    def file_io(filename):
        return gzip.open(filename, "rt", encoding=encoding) if gzipped else tf.io.gfile.GFile(filename, "r")
    if column_names is None:
        column_names = readers._infer_column_names(filenames, field_delim, use_quote_delim, file_io)
    if select_columns is not None:
        select_columns = readers._get_sorted_col_indices(select_columns, column_names)
    if column_defaults is not None:
        column_defaults = [tf.constant([], dtype=x) if not tf.is_tensor(x) and isinstance(x, tf.dtypes.DType) else x
                           for x in column_defaults]
    else:
        column_defaults = readers._infer_column_defaults(filenames, len(column_names), field_delim, use_quote_delim,
                                                         na_value, header, num_rows_for_inference, select_columns,
                                                         file_io)
    if select_columns is not None and len(column_names) > len(select_columns):
        column_names = [column_names[i] for i in select_columns]

    def lines_of(filename):
        return tf.data.TextLineDataset(filename, compression_type=compression_type).skip(1 if header else 0)

    if reads == tf.data.AUTOTUNE:
        dataset = dataset.interleave(lines_of, num_parallel_calls=reads, deterministic=not sloppy)
    else:
        dataset = dataset.interleave(lines_of, cycle_length=reads, block_length=1,
                                     num_parallel_calls=None if reads == 1 else reads, deterministic=not sloppy)
    if shuffle:
        dataset = dataset.shuffle(shuffle_buffer_size, shuffle_seed)
    if num_epochs != 1:
        dataset = dataset.repeat(num_epochs)
    dataset = dataset.batch(batch_size, drop_remainder=num_epochs is None if drop_remainder is None else drop_remainder)

    def parse(lines):
        columns = tf.io.decode_csv(lines, column_defaults, field_delim, use_quote_delim, na_value,
                                   select_cols=select_columns)
        features = collections.OrderedDict(zip(column_names, columns))
        if label_name is not None:
            return features, features.pop(label_name)
        return features
    return dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE).prefetch(
        tf.data.AUTOTUNE if prefetch_buffer_size is None else prefetch_buffer_size)


def vectorized(function):
    """Give a batch function: `tf.vectorized_map` of a per-example `function` (which tf.data calls with the
    element's components as arguments), without pfor's while-loop fallback."""
    def batch_function(*args):
        return tf.vectorized_map(lambda parts: function(*parts), args, fallback_to_while_loop=False)
    return batch_function


def _shaped(spec, parts):
    if "dict" in spec:
        return {k: _shaped(v, parts) for k, v in spec["dict"].items()}
    if "tuple" in spec:
        return tuple(_shaped(v, parts) for v in spec["tuple"])
    if "list" in spec:
        return [_shaped(v, parts) for v in spec["list"]]
    return tf.reshape(tf.cast(parts[spec["role"]], spec["dtype"]), [-1, *spec["shape"]])


def libsvm_batch_decoder(spec):
    """Give decode(lines string[N]) → the user's structure, from pipebench's batched libsvm decoder."""
    decode = libsvm_decoder(spec["field_size"])

    def decode_batch(lines):
        features, labels = decode(lines)
        return _shaped(spec["structure"], {"label": labels, "ids": features["feat_ids"],
                                          "values": features["feat_vals"]})
    return decode_batch
