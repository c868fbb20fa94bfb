"""pipebench's own functions a rewrite needs, as source text: written into the rewritten module
(pipebench.diagnose.export) and appended to a patched file (pipebench.diagnose.patch) alike. No TensorFlow here."""
from __future__ import annotations

from pipebench.pipeline.export import literal

VECTORIZED_SOURCE = '''def vectorized(function):
    """Give a batch function: tf.vectorized_map of a per-example function (pfor, no while-loop fallback)."""
    def batch_function(*args):
        return tf.vectorized_map(lambda parts: function(*parts), args, fallback_to_while_loop=False)
    return batch_function'''


def libsvm_helper(name: str, spec: dict, replaces: str) -> str:
    """Give the source of a batched decoder `name` for a libsvm spec (pipebench.diagnose.vectorize), as a function."""
    def build(node: dict) -> str:
        if "dict" in node:
            return "{" + ", ".join(f"{literal(k)}: {build(v)}" for k, v in node["dict"].items()) + "}"
        if "tuple" in node:
            items = [build(v) for v in node["tuple"]]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        if "list" in node:
            return "[" + ", ".join(build(v) for v in node["list"]) + "]"
        return (f"tf.reshape(tf.cast(parts[{literal(node['role'])}], {literal(node['dtype'])}), "
                f"{literal([-1, *node['shape']])})")
    return (f"def {name}(lines):\n"
            f'    """Decode a batch of libsvm lines as {replaces} decodes each line (checked by pipebench '
            'diagnose on a sample and one epoch)."""\n'
            f"    features, labels = libsvm_decoder({literal(spec['field_size'])})(lines)\n"
            '    parts = {"label": labels, "ids": features["feat_ids"], "values": features["feat_vals"]}\n'
            f"    return {build(spec['structure'])}")


GATHER_SOURCE = '''_PIPEBENCH_ROWS = []


def pipebench_indexed_rows(tensors):
    """Give the row numbers of what tf.data.Dataset.from_tensor_slices(tensors) would slice, as a dataset; the
    next pipebench_gathered_rows() gathers them (pipebench diagnose's rewrite: shuffle and batch the numbers, then
    gather each batch's rows at once; a shuffle draws alike whatever it holds, so the rows come in the same order)."""
    tensors = tf.nest.map_structure(tf.convert_to_tensor, tensors)
    _PIPEBENCH_ROWS.append(tensors)
    return tf.data.Dataset.range(tf.shape(tf.nest.flatten(tensors)[0], out_type=tf.int64)[0])


def pipebench_gathered_rows():
    """Give the function that gathers a batch of row numbers' rows from the last pipebench_indexed_rows source; when
    none is pending (a branch that sliced its rows as before), the batch as it is."""
    if not _PIPEBENCH_ROWS:
        return lambda *batch: batch[0] if len(batch) == 1 else batch
    tensors = _PIPEBENCH_ROWS.pop()

    def gather(indices):
        return tf.nest.map_structure(lambda t: tf.gather(t, indices), tensors)
    return gather'''
