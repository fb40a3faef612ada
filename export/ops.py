"""Which ops an exported SavedModel runs, and the allow-list a serving graph must stay within.

A served graph may use only core TensorFlow ops plus tf-text's `FastBertNormalize` and
`FastWordpieceTokenizeWithOffsets` (ALBERT's exports: `FastSentencepieceTokenize` instead): stock TF Serving links
an older, pinned tf-text, and TFLite's tf-text registrar has only such kernels. Ops such as `RegexSplitWithOffsets`,
`CaseFoldUTF8`, `TFText>RoundRobinTrim` (keras-hub's preprocessing) or `RaggedRange` fail there. The list below is
explicit on purpose: a new op in a graph is a decision someone makes, not an accident.

Examples:

>>> ops = signature_ops("out/export/1")
>>> sorted(ops)
['serve_examples', 'serve_tokens', 'serving_default']
>>> disallowed_ops(set().union(*ops.values()))
set()
"""

import os
from typing import Dict, Iterable, Set


TF_TEXT_OPS = frozenset({"FastBertNormalize", "FastWordpieceTokenizeWithOffsets"})
# ALBERT's tokenizer: tf-text's SentencePiece kernel (TFLite's tf-text registrar has it too; no offsets).
SENTENCEPIECE_OPS = frozenset({"TFText>FastSentencepieceTokenize"})

# Core TF ops the export graphs use: preprocessing (dense packing), the encoder and heads, and the
# post-processing (labels, entity chunks, offsets, tf.Example parsing).
CORE_OPS = frozenset({
    # graph plumbing and variables
    "Const", "Identity", "IdentityN", "NoOp", "Placeholder", "PartitionedCall", "StatefulPartitionedCall",
    "ReadVariableOp", "VarHandleOp", "StopGradient", "If", "StatelessIf",
    # shapes and layout
    "BroadcastTo", "ConcatV2", "Fill", "OnesLike", "Pack", "Range", "Reshape", "Shape", "StridedSlice",
    "ExpandDims", "Transpose", "Unpack", "ZerosLike",
    # arithmetic and comparisons
    "AddV2", "Cast", "Cumsum", "Equal", "FloorMod", "Greater", "GreaterEqual", "Less", "LessEqual",
    "LogicalAnd", "LogicalNot", "LogicalOr", "Maximum", "Minimum", "Mul", "Neg", "NotEqual", "RealDiv", "Rsqrt",
    "SelectV2", "Square", "SquaredDifference", "Sub",
    # reductions, gathers and scatters
    "ArgMax", "GatherNd", "GatherV2", "Max", "Mean", "Prod", "ScatterNd", "Sum", "UnsortedSegmentSum", "Where",
    # the model (OneHot: the token-type embedding is a one-hot product, as Google's BERT; TFLite has it built in)
    # Pow: the tanh GELU's cube (gelu_new, ALBERT's); TFLite has POW built in
    "BatchMatMulV2", "BiasAdd", "Einsum", "Erfc", "MatMul", "OneHot", "Pow", "Softmax", "Tanh",
    # strings and tf.Example
    "ParseExampleV2", "StringLength", "Substr",
})
ALLOWED_OPS = TF_TEXT_OPS | SENTENCEPIECE_OPS | CORE_OPS

# Ops of the checkpoint save/restore functions TF Serving runs once at load time (not on a request).
SAVER_OPS = frozenset({
    "MergeV2Checkpoints", "RestoreV2", "SaveV2", "ShardedFilename", "StaticRegexFullMatch", "StringJoin",
    "AssignVariableOp", "Pack", "Select", "DisableCopyOnRead", "VarIsInitializedOp",
})


def serving_save_options():
    """`tf.saved_model.SaveOptions` for a served SavedModel. Served graphs are never differentiated, so custom
    gradients (the GELU's) are not saved: their functions would add ops outside the allow-list, and saving one
    fails on the tensors its gradient captures."""
    import tensorflow as tf

    return tf.saved_model.SaveOptions(experimental_custom_gradients=False)


def _load_meta_graph(export_dir):
    path = os.path.join(export_dir, "saved_model.pb")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no saved_model.pb in {export_dir}")
    from official_bert import keras_compat

    saved_model = keras_compat.saved_model_proto()
    with open(path, "rb") as f:
        saved_model.ParseFromString(f.read())
    return saved_model.meta_graphs[0]


def _called_functions(node) -> Iterable[str]:
    """Names of the functions a node calls (`f`, `then_branch`, `body`, ... attributes)."""
    for value in node.attr.values():
        if value.HasField("func"):
            yield value.func.name
        for function in value.list.func:
            yield function.name


def graph_ops(graph_def, roots=None) -> Set[str]:
    """The op types reachable from `roots` in a GraphDef, walking into every function they call.

    Args:
        graph_def: a `tf.compat.v1.GraphDef` with its function library.
        roots: node names (or "node:output" tensor names) to start from; None: every node of the graph.

    Returns:
        The set of op type names.
    """
    library = {f.signature.name: f for f in graph_def.library.function}
    nodes = {node.name: node for node in graph_def.node}
    ops, seen_functions = set(), set()

    def visit_function(name):
        if name in seen_functions or name not in library:
            return
        seen_functions.add(name)
        for node in library[name].node_def:
            ops.add(node.op)
            if node.op in library:  # a function called directly as an op
                visit_function(node.op)
            for called in _called_functions(node):
                visit_function(called)

    pending = list(nodes) if roots is None else [r.split(":")[0].lstrip("^") for r in roots]
    seen_nodes = set()
    while pending:
        name = pending.pop()
        if name in seen_nodes or name not in nodes:
            continue
        seen_nodes.add(name)
        node = nodes[name]
        ops.add(node.op)
        if node.op in library:
            visit_function(node.op)
        for called in _called_functions(node):
            visit_function(called)
        pending.extend(i.split(":")[0].lstrip("^") for i in node.input)
    return ops - set(library)


def signature_ops(export_dir) -> Dict[str, Set[str]]:
    """Every op each serving signature of a SavedModel can run, nested functions included.

    Args:
        export_dir: a SavedModel directory (`<export_dir>/<version>`).

    Returns:
        signature name -> set of op type names. TF's own `__saved_model_init_op` (run once at load) is
        left out; `saved_model_ops` covers it.
    """
    meta_graph = _load_meta_graph(export_dir)
    return {name: graph_ops(meta_graph.graph_def, [t.name for t in signature.outputs.values()])
            for name, signature in meta_graph.signature_def.items() if not name.startswith("__")}


def saved_model_ops(export_dir) -> Set[str]:
    """Every op anywhere in a SavedModel: its graph and every function of its library (saved functions too)."""
    graph_def = _load_meta_graph(export_dir).graph_def
    ops = graph_ops(graph_def)
    for function in graph_def.library.function:
        ops |= {node.op for node in function.node_def}
    return ops - {f.signature.name for f in graph_def.library.function}


def disallowed_ops(ops: Iterable[str], allowed=ALLOWED_OPS) -> Set[str]:
    """The ops of `ops` outside the allow-list."""
    return set(ops) - set(allowed)
