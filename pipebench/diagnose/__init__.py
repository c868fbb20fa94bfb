"""`pipebench diagnose PATH.py:FUNCTION`: the slow stage of a user's own tf.data pipeline, rewrites proved by
paired measurement, and the rewritten input_fn.

Modules, in the order data flows (only those marked TF import TensorFlow, and only in the worker):

- target: `--set NAME=VALUE` parsed in the CLI process (`PATH.py:FUNCTION` is pipebench.pipeline.function's,
  shared with an experiment's `pipelines.functions`);
- pipebench.pipeline.user_code [TF], shared too: import the user's module, call the function, refuse what is
  not a tf.data.Dataset;
- walk [TF]: the dataset's stages, from its source to its root, as plain records (records);
- replay [TF]: a list of steps (records.Step) back into a dataset, the original's or a rewrite's;
- vectorize [TF], rewrites [TF]: candidate rewrites and their preconditions;
- content [TF]: one epoch's examples, canonicalised, to compare a rewrite with the original;
- rounds: paired, interleaved rounds of several arms in one warm worker;
- train [TF]: the train step and its ceiling on the original and the rewritten pipeline;
- worker [TF]: the diagnosis in a fresh process; run: the CLI side (spawn, progress, the output folder);
- report, export: diagnosis.md / diagnosis.json and the rewritten module, from the records alone.
"""
