"""RoBERTa's byte-level BPE in the graph: ids and offsets equal `RobertaTokenizerFast`'s; packing; SavedModel.

The vocab (8000 merges) is trained here with `tokenizers` on ../shared/data text. CI checks a sample of every real
corpus and a fuzz corpus; `python -m tests.text.bpe_parity` checks every text (see docs/families.md for its figures).
"""

import json
import random
import textwrap

import numpy as np
import pytest
import tensorflow as tf

import bpe_parity
import regenerate_byte_level_classes
import text_corpora as corpora
from official_bert.text import BytePairTokenizer, byte_level, load_preprocessor
from tests.tasks.forked_commands import run_python

pytestmark = pytest.mark.slow

SEQ_LENGTH = 24
SAMPLE = 100  # texts per real corpus in CI
# Every op of the tokenizer + packer graph, While-loop body included: core TensorFlow only, no tf-text kernel and
# no hash table. The string ops (UnicodeDecodeWithOffsets, StringSplit, DecodeRaw, StringLength), the sorted-table
# lookups (LowerBound, UpperBound) and DenseBincount have no TFLite builtin: export.tflite refuses RoBERTa.
BPE_GRAPH_OPS = {
    "AddV2", "Any", "Cast", "ConcatV2", "Const", "Cumsum", "DecodeRaw", "DenseBincount", "Equal", "Fill", "FloorMod",
    "GatherV2", "Greater", "GreaterEqual", "Identity", "Less", "LessEqual", "LogicalAnd", "LogicalNot", "LogicalOr",
    "LowerBound", "Max", "Maximum", "Minimum", "Mul", "NotEqual", "OnesLike", "Pack", "Placeholder", "Prod", "Range",
    "Reshape", "ScatterNd", "SelectV2", "Shape", "Size", "Squeeze", "StatelessWhile", "StridedSlice", "StringLength",
    "StringSplit", "Sub", "Sum", "UnicodeDecodeWithOffsets", "UnsortedSegmentMin", "UnsortedSegmentSum", "UpperBound",
    "Where", "ZerosLike", "NoOp", "IdentityN", "PartitionedCall", "StatefulPartitionedCall",
}


@pytest.fixture(scope="module")
def bpe_dir(shared_data, tmp_path_factory):
    """A RoBERTa-format checkpoint directory holding only the tokenizer: config.json + vocab.json + merges.txt."""
    directory = bpe_parity.train_bpe(shared_data, tmp_path_factory.mktemp("roberta_bpe"))
    (directory / "config.json").write_text(json.dumps({"model_type": "roberta", "vocab_size": 8261,
                                                       "pad_token_id": 1, "type_vocab_size": 1,
                                                       "max_position_embeddings": 514}))
    return directory


@pytest.fixture(scope="module")
def ours(bpe_dir):
    return BytePairTokenizer(str(bpe_dir / "vocab.json"), str(bpe_dir / "merges.txt"))


@pytest.fixture(scope="module")
def reference(bpe_dir):
    pytest.importorskip("transformers")
    return bpe_parity.reference_tokenizer(bpe_dir)


def test_shipped_code_point_classes_equal_the_reference_regex():
    """The class table (measured from `tokenizers` by regenerate_byte_level_classes.py) at every range edge and at
    random code points."""
    pytest.importorskip("tokenizers")
    starts, classes = byte_level.class_ranges()
    sample = {int(c) for c in starts} | {int(c) - 1 for c in starts[1:]}
    sample |= set(random.Random(0).sample(range(0x110000), 2000))
    measured = regenerate_byte_level_classes.measured_classes(sorted(sample))
    shipped = {cp: int(classes[np.searchsorted(starts, cp, side="right") - 1]) for cp in sample}
    assert shipped == measured


@pytest.mark.parametrize("corpus", sorted(corpora.REAL_CORPORA))
def test_ids_and_offsets_equal_roberta_tokenizer_on_real_text(shared_data, ours, reference, corpus):
    texts = corpora.REAL_CORPORA[corpus](shared_data)
    sample = random.Random(corpus).sample(texts, SAMPLE)
    assert bpe_parity.mismatches(ours, reference, sample) == (0, 0, None)


def test_ids_and_offsets_equal_roberta_tokenizer_on_fuzz_corpus(ours, reference):
    texts = bpe_parity.fuzz_corpus(120) + ["", " ", "   ", "\n", "'s", " 's", "x.'s", "a\t\tb", "a  b", "end  "]
    assert bpe_parity.mismatches(ours, reference, texts) == (0, 0, None)


def test_a_batch_with_no_word_gives_empty_rows(ours):
    """Every text empty (no byte to merge): one empty row per text, with offsets, in eager and graph mode."""
    for texts in ([""], ["", ""]):
        ids, starts, ends = ours(tf.constant(texts), with_offsets=True)
        assert ids.to_list() == starts.to_list() == ends.to_list() == [[] for _ in texts]
    graph = tf.function(lambda text: ours(text).flat_values, input_signature=[tf.TensorSpec([None], tf.string)])
    assert graph(tf.constant([""])).shape == (0,)


def test_preprocessor_packs_as_roberta_tokenizer(shared_data, bpe_dir, reference):
    preprocessor = load_preprocessor(bpe_dir, SEQ_LENGTH)
    pairs = corpora.mrpc_pairs(shared_data)[:40] + [("", ""), ("one", ""), ("x " * 40, "short")]
    first, second = [p[0] for p in pairs], [p[1] for p in pairs]
    expected = reference(first, second, truncation="longest_first", max_length=SEQ_LENGTH, padding="max_length")
    inputs = preprocessor([tf.constant(first), tf.constant(second)])
    np.testing.assert_array_equal(inputs["input_word_ids"].numpy(), expected["input_ids"])
    np.testing.assert_array_equal(inputs["input_mask"].numpy(), expected["attention_mask"])
    assert not inputs["input_type_ids"].numpy().any()  # one token type
    single = reference(first, truncation=True, max_length=SEQ_LENGTH, padding="max_length")
    np.testing.assert_array_equal(preprocessor(tf.constant(first))["input_word_ids"].numpy(), single["input_ids"])
    _, truncated = preprocessor.pack([tf.constant(first), tf.constant(second)])
    lengths = [len(reference(a, b)["input_ids"]) for a, b in pairs]
    np.testing.assert_array_equal(truncated.numpy(), np.asarray(lengths) > SEQ_LENGTH)


def test_bad_tokenizer_files_are_named(bpe_dir, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "roberta", "pad_token_id": 1,
                                                      "type_vocab_size": 1}))
    (tmp_path / "vocab.json").write_text((bpe_dir / "vocab.json").read_text())
    with pytest.raises(FileNotFoundError, match="merges.txt"):
        load_preprocessor(tmp_path, SEQ_LENGTH)
    (tmp_path / "merges.txt").write_text("#version: 0.2\nĠ t\nnot_a_token x\n")
    with pytest.raises(ValueError, match="merges.txt: merge 2 .*'not_a_token'"):
        load_preprocessor(tmp_path, SEQ_LENGTH)
    (tmp_path / "merges.txt").write_text("Ġ t u\n")
    with pytest.raises(ValueError, match="merges.txt, line 1: expected two tokens"):
        load_preprocessor(tmp_path, SEQ_LENGTH)


class _Export(tf.Module):
    def __init__(self, preprocessor):
        super().__init__()
        self.preprocessor = preprocessor

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.string)])
    def pack_pair(self, first, second):
        return self.preprocessor([first, second])


_FRESH = textwrap.dedent("""
    import json, sys
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (what a serving process imports; nothing of the project)
    request = json.load(open(sys.argv[1], encoding="utf-8"))
    outputs = tf.saved_model.load(request["dir"]).signatures["serving_default"](
        first=tf.constant(request["first"]), second=tf.constant(request["second"]))
    np.savez(request["out"], **{k: v.numpy() for k, v in outputs.items()})
    print(sorted(m for m in sys.modules if m.split(".")[0] in ("official_bert", "export", "tasks")))
""")


def _graph_ops(function):
    graph = function.graph.as_graph_def()
    ops = {node.op for node in graph.node}
    for library_function in graph.library.function:
        ops |= {node.op for node in library_function.node_def}
    return ops


def test_saved_model_runs_in_a_fresh_process_with_core_ops_only(bpe_dir, tmp_path):
    module = _Export(load_preprocessor(bpe_dir, SEQ_LENGTH))
    function = module.pack_pair.get_concrete_function()
    ops = _graph_ops(function)
    assert ops <= BPE_GRAPH_OPS, sorted(ops - BPE_GRAPH_OPS)
    assert not any(op.startswith(("TFText", "FastBert", "FastWordpiece", "Regex")) for op in ops)
    tf.saved_model.save(module, str(tmp_path / "model"), signatures={"serving_default": function})
    first, second = ["Hello world!", "Café 😀 it's"], ["a  b", ""]
    request = {"dir": str(tmp_path / "model"), "first": first, "second": second, "out": str(tmp_path / "out.npz")}
    (tmp_path / "request.json").write_text(json.dumps(request))
    result = run_python(["-c", _FRESH, tmp_path / "request.json"], timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "[]"
    served = np.load(tmp_path / "out.npz")
    expected = module.pack_pair(tf.constant(first), tf.constant(second))
    for name in ("input_word_ids", "input_mask", "input_type_ids"):
        np.testing.assert_array_equal(served[name], expected[name].numpy())
