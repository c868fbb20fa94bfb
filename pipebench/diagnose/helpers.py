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
