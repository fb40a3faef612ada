"""export.saved_model: layout and versions, allowed ops only, answers in a fresh process equal the Python models'."""

import json
import os
import pathlib
import re
import stat
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from export.ops import ALLOWED_OPS, SAVER_OPS, TF_TEXT_OPS, disallowed_ops, graph_ops, saved_model_ops, signature_ops
from export.saved_model import save
from export.warmup import WARMUP_FILE, read_warmup_file
from official_bert.owned_files import RECORD_FILE
from tests.tasks.forked_commands import run_forked, run_python

pytestmark = pytest.mark.slow

SIGNATURES = {"serving_default", "serve_examples", "serve_tokens"}


@pytest.fixture(scope="module")
def mrpc_pairs(shared_data):
    from official_bert.data.glue import read_glue_tsv

    examples = read_glue_tsv("MRPC", str(shared_data / "glue" / "MRPC" / "dev.tsv"), "dev")
    return list(examples.text_a[:40]), list(examples.text_b[:40])


@pytest.fixture(scope="module")
def conll_texts(shared_data):
    from official_bert.data.conll import read_conll

    sentences = read_conll(str(shared_data / "conll2003" / "hf-iob2" / "test.txt")).words[:120]
    return [" ".join(words) for words in sentences]


def test_cli_writes_the_next_version_with_assets_and_warmup(classifier_dir, vocab_file, tmp_path):
    base = tmp_path / "mrpc"
    (base / "3").mkdir(parents=True)  # an existing version: the next one is 4
    (tmp_path / "forked").mkdir()
    (result,) = run_forked([("export.saved_model", [f"--model_dir={classifier_dir}", f"--export_dir={base}"])],
                           tmp_path / "forked")
    assert result.returncode == 0, result.stderr[-3000:]
    version = base / "4"
    assert sorted([n for n in os.listdir(base) if n != RECORD_FILE]) == ["3", "4"]  # no temporary directory left behind
    assert (version / "saved_model.pb").is_file() and (version / "variables" / "variables.index").is_file()
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(version.stat().st_mode) == 0o777 & ~umask  # not mkdtemp's 0o700: a server must read it
    assert (version / "assets" / "vocab.txt").read_text() == pathlib.Path(vocab_file).read_text()
    assert (version / "assets" / "labels.txt").read_text() == "0\n1\n"
    requests = read_warmup_file(version / "assets.extra" / WARMUP_FILE)
    assert [name for name, _ in requests] == ["serving_default", "serve_examples", "serve_tokens"]
    assert set(requests[0][1]) == {"text", "text_b"} and requests[0][1]["text"].shape == (2,)
    assert requests[2][1]["input_word_ids"].shape == (2, 64)

    # saved_model_cli (TF's own inspector) lists the signatures and their inputs.
    cli = pathlib.Path(sys.executable).parent / "saved_model_cli"
    shown = subprocess.run([str(cli), "show", "--dir", str(version), "--all"], capture_output=True, text=True,
                           timeout=300)
    assert shown.returncode == 0, shown.stderr[-3000:]
    for name in SIGNATURES:
        assert f"signature_def['{name}']" in shown.stdout
    for name in ("text_b", "examples", "input_word_ids", "logits", "label", "truncated"):
        assert f"['{name}'] tensor_info" in shown.stdout, name


def test_an_existing_version_is_never_overwritten(exports):
    base, version = os.path.split(exports["classifier"])
    before = os.path.getmtime(os.path.join(exports["classifier"], "saved_model.pb"))
    with pytest.raises(FileExistsError, match="versions are never overwritten"):
        save(None, base, version=int(version))
    assert os.path.getmtime(os.path.join(exports["classifier"], "saved_model.pb")) == before


@pytest.mark.parametrize("kind", ["classifier", "tagger"])
def test_tokenizer_tables_are_stored_once(exports, kind):
    """The tokenizer's tables (~3 MB for BERT's vocab) are captured constants, stored once in the file's graph;
    inlined into the functions they were copied into each signature, for each text column."""
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    with open(os.path.join(exports[kind], "saved_model.pb"), "rb") as f:
        saved.ParseFromString(f.read())
    graph = saved.meta_graphs[0].graph_def
    inlined = [(function.signature.name, node.name) for function in graph.library.function
               for node in function.node_def if node.op == "Const" and node.attr["value"].ByteSize() > 100_000]
    assert inlined == []
    stored = [node.attr["value"].ByteSize() for node in graph.node if node.op == "Const"]
    assert sum(size > 1_000_000 for size in stored) == 2  # the normalizer's and WordPiece's models, once each


@pytest.mark.parametrize("kind", ["classifier", "tagger"])
def test_serve_examples_calls_serving_default_instead_of_tracing_the_model_again(exports, kind):
    """`serve_examples` parses its tf.Examples and calls `serving_default`'s function, so the file stores the model's
    graph once for both (each copy of a MiniLM classifier's graph is 0.4-0.6 MB of saved_model.pb)."""
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    with open(os.path.join(exports[kind], "saved_model.pb"), "rb") as f:
        saved.ParseFromString(f.read())
    functions = [f for f in saved.meta_graphs[0].graph_def.library.function
                 if re.fullmatch(r"__inference_serve_examples_\d+", f.signature.name)]
    assert len(functions) == 1
    ops = {node.op for node in functions[0].node_def}
    assert "ParseExampleV2" in ops and not ops & {"MatMul", "BatchMatMulV2", "Einsum"}
    called = {node.attr["f"].func.name for node in functions[0].node_def
              if node.op in ("PartitionedCall", "StatefulPartitionedCall")}
    assert any(re.fullmatch(r"__inference_serve_\d+", name) for name in called), called


@pytest.mark.parametrize("kind", ["classifier", "tagger"])
def test_every_signature_uses_only_serving_safe_ops(exports, kind):
    ops = signature_ops(exports[kind])
    assert set(ops) == SIGNATURES
    for name, signature_op_set in ops.items():
        assert disallowed_ops(signature_op_set) == set(), name
        assert ("FastBertNormalize" in signature_op_set) == (name != "serve_tokens"), name
    assert TF_TEXT_OPS <= ops["serving_default"]
    # Everything else in the file (the TFLite form, save/restore functions) stays within core TF too.
    assert disallowed_ops(saved_model_ops(exports[kind]), ALLOWED_OPS | SAVER_OPS) == set()


def test_the_op_listing_catches_other_tf_text_ops():
    import tensorflow_text as tf_text

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def split(text):
        return tf_text.regex_split_with_offsets(text, r"\s")[0].flat_values

    ops = graph_ops(split.get_concrete_function().graph.as_graph_def())
    assert "RegexSplitWithOffsets" in disallowed_ops(ops)


def _fresh_process_outputs(tmp_path, models):
    """Runs every signature of each SavedModel in a process that imports only tensorflow and tensorflow_text."""
    (tmp_path / "models.json").write_text(json.dumps(models), encoding="utf-8")
    script = textwrap.dedent(f"""
        import json, sys
        import numpy as np
        import tensorflow as tf
        import tensorflow_text  # registers the two tf-text kernels; nothing of the project is imported
        models = json.load(open({str(tmp_path / "models.json")!r}, encoding="utf-8"))
        for name, spec in models.items():
            model = tf.saved_model.load(spec["dir"])
            texts = {{k: tf.constant(v) for k, v in spec["texts"].items()}}
            examples = [tf.train.Example(features=tf.train.Features(feature={{
                k: tf.train.Feature(bytes_list=tf.train.BytesList(value=[v[i].encode()]))
                for k, v in spec["texts"].items()}})).SerializeToString() for i in range(len(spec["texts"]["text"]))]
            tokens = {{k: tf.constant(v, tf.int32) for k, v in spec["tokens"].items()}}
            out = {{}}
            requests = (("serving_default", texts), ("serve_examples", {{"examples": tf.constant(examples)}}),
                        ("serve_tokens", tokens))
            for signature, inputs in requests:
                answers = model.signatures[signature](**inputs)
                out.update({{f"{{signature}}/{{k}}": v.numpy() for k, v in answers.items()}})
            np.savez(spec["out"], **out)
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("official_bert", "export", "tasks")))
    """)
    result = run_python(["-c", script], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "[]"
    return {name: dict(np.load(spec["out"], allow_pickle=True)) for name, spec in models.items()}


@pytest.fixture(scope="module")
def fresh_outputs(exports, classifier_dir, mrpc_pairs, conll_texts, tmp_path_factory):
    from official_bert.text import text_preprocessor

    vocab_file = classifier_dir / "vocab.txt"
    first, second = mrpc_pairs
    pair_tokens, _ = text_preprocessor(vocab_file, True, 64).pack([tf.constant(first), tf.constant(second)])
    ner_tokens, _ = text_preprocessor(vocab_file, True, 48).pack([tf.constant(conll_texts)])
    tmp = tmp_path_factory.mktemp("fresh")
    models = {
        "classifier": {"dir": exports["classifier"], "texts": {"text": first, "text_b": second},
                       "tokens": {k: v.numpy().tolist() for k, v in pair_tokens.items()}},
        "tagger": {"dir": exports["tagger"], "texts": {"text": conll_texts},
                   "tokens": {k: v.numpy().tolist() for k, v in ner_tokens.items()}},
    }
    for name, spec in models.items():
        spec["out"] = str(tmp / f"{name}.npz")
    return _fresh_process_outputs(tmp, models), {k: v.numpy() for k, v in pair_tokens.items()}, \
        {k: v.numpy() for k, v in ner_tokens.items()}


def _python_model(model_dir, kind):
    import keras

    from official_bert import BertConfig, BertEncoder
    from official_bert.models.classifier import BertClassifier
    from official_bert.models.token_classifier import BertTokenClassifier

    keras.config.set_dtype_policy("float32")
    config = BertConfig.from_json_file(str(model_dir / "bert_config.json"))
    task = json.loads((model_dir / "task.json").read_text())
    model = (BertClassifier if kind == "classifier" else BertTokenClassifier)(BertEncoder(config),
                                                                             len(task["label_names"]))
    model.load_weights(str(model_dir / "model.weights.h5"))
    return model


def test_classifier_answers_equal_the_python_model(fresh_outputs, classifier_dir):
    outputs, tokens, _ = fresh_outputs
    out = outputs["classifier"]
    logits = _python_model(classifier_dir, "classifier")(tokens, training=False).numpy()  # (40, 2)
    for signature in ("serving_default", "serve_examples", "serve_tokens"):
        np.testing.assert_allclose(out[f"{signature}/logits"], logits, atol=1e-5, rtol=0)
        np.testing.assert_array_equal(out[f"{signature}/label_id"], logits.argmax(-1))
        assert out[f"{signature}/label"].tolist() == [str(i).encode() for i in logits.argmax(-1)]
        # logits within 1e-5 move a softmax by at most 1e-5 / 4 (its slope is at most 1/4)
        np.testing.assert_allclose(out[f"{signature}/probabilities"], tf.nn.softmax(logits).numpy(), atol=2.5e-6)
    assert len(set(logits.argmax(-1))) == 2  # both labels occur: the check is not vacuous
    # Pieces beyond 64 - 3 are cut: the flag says which pairs.
    lengths = tokens["input_mask"].sum(-1)
    truncated = out["serving_default/truncated"]
    assert truncated.any() and not truncated.all()
    assert (lengths[truncated] == 64).all()
    np.testing.assert_array_equal(out["serve_examples/truncated"], truncated)


@pytest.fixture(scope="module")
def tagger(ner_dir):
    """`EntityTagger` of the tiny NER model_dir (the Python path the tagger export is checked against)."""
    from official_bert.pipelines import EntityTagger

    return EntityTagger.from_model_dir(str(ner_dir))


def test_tagger_entities_equal_entity_tagger_on_conll_sentences(fresh_outputs, ner_dir, tagger, conll_texts):
    outputs, _, tokens = fresh_outputs
    out = outputs["tagger"]
    expected = tagger(conll_texts)
    split = tagger.split_words(conll_texts)
    compared, pieces = 0, np.array([sum(len(p) for p in words) for words, _ in split])
    for i, text in enumerate(conll_texts):  # a text of more than 46 pieces goes on in windows of whole words
        assert not out["serving_default/truncated"][i]  # every word fits a window
        n = out["serving_default/num_entities"][i]
        got = [{"type": out["serving_default/entity_type"][i, j].decode(),
                "start": int(out["serving_default/entity_start"][i, j]),
                "end": int(out["serving_default/entity_end"][i, j]),
                "text": out["serving_default/entity_text"][i, j].decode()} for j in range(n)]
        assert got == expected[i], text
        words = out["serving_default/num_words"][i]
        assert words == len(split[i][0])
        assert [tuple(s) for s in zip(out["serving_default/word_start"][i, :words],
                                      out["serving_default/word_end"][i, :words])] == split[i][1]
        compared += len(got)
    assert compared > 100 and (pieces > 46).sum() >= 3
    for key in ("num_entities", "entity_type", "entity_start", "entity_end", "word_labels", "entity_byte_end"):
        np.testing.assert_array_equal(out[f"serve_examples/{key}"], out[f"serving_default/{key}"], err_msg=key)
    logits = _python_model(ner_dir, "tagger")(tokens, training=False).numpy()  # (120, 48, 9)
    # Float rounding only (rtol): the export's graph runs the GELU fused into its matmul (oneDNN), eager Keras does not.
    np.testing.assert_allclose(out["serve_tokens/logits"], logits, atol=1e-5, rtol=1e-5)
    # raw text: each text's first window, the model on the request's real tokens; a text of one window: its tokens
    real = np.asarray(tokens["input_mask"]).astype(bool) & (pieces <= 46)[:, None]  # (120, 48)
    np.testing.assert_allclose(out["serving_default/logits"][real], logits[real], atol=1e-5, rtol=1e-5)
    labels = np.array(tagger.label_names, dtype=object)[logits.argmax(-1)]
    assert out["serve_tokens/token_labels"].astype(str).tolist() == labels.tolist()


def test_tagger_entities_equal_entity_tagger_on_conll_documents_joined_into_long_texts(saved_of, tagger, conll_texts):
    """Six texts of 20 CoNLL sentences each (hundreds of pieces: many windows of 46), with a short one and an empty
    one in the same request: the same words and entities as `EntityTagger`, entities joined across windows."""
    texts = [" ".join(conll_texts[i:i + 20]) for i in range(0, 120, 20)] + ["Peter flew to Brussels.", ""]
    out = {k: v.numpy() for k, v in saved_of("tagger").signatures["serving_default"](text=tf.constant(texts)).items()}
    split = tagger.split_words(texts)
    for i, expected in enumerate(tagger(texts)):
        got = [{"type": out["entity_type"][i, j].decode(), "start": int(out["entity_start"][i, j]),
                "end": int(out["entity_end"][i, j]), "text": out["entity_text"][i, j].decode()}
               for j in range(out["num_entities"][i])]
        assert got == expected, i
        assert out["num_words"][i] == len(split[i][0])
    assert sum(len(e) for e in tagger(texts)) > 100 and not out["truncated"].any()
    assert min(sum(len(p) for p in words) for words, _ in split[:6]) > 3 * 46  # every long text: 4+ windows


@pytest.mark.parametrize("kind", ["classifier", "tagger"])
def test_warmup_requests_replay_against_the_model(exports, saved_of, kind):
    model = saved_of(kind)
    requests = read_warmup_file(os.path.join(exports[kind], "assets.extra", WARMUP_FILE))
    answers = [model.signatures[name](**{k: tf.constant(v) for k, v in inputs.items()}) for name, inputs in requests]
    # The three forms of the same two texts give the same logits, up to float32 rounding: serve_tokens runs at the
    # padded length, the raw text at its own, and the kernels' summation order differs with the shapes (1.7e-6 on a
    # logit of 2.8 with AVX2's oneDNN kernels; equal to 1e-6 with AVX-512's).
    np.testing.assert_allclose(answers[0]["logits"], answers[1]["logits"], atol=1e-5, rtol=1e-5)
    if kind == "classifier":
        np.testing.assert_allclose(answers[0]["logits"], answers[2]["logits"], atol=1e-5, rtol=1e-5)
    else:  # the raw-text tagger ran at the longer text's length (float rounding differs), zeros after it
        real = requests[2][1]["input_mask"].astype(bool)  # serve_tokens' packed inputs, (2, seq)
        longest = real.sum(axis=1).max()
        text_logits, token_logits = answers[0]["logits"].numpy(), answers[2]["logits"].numpy()
        np.testing.assert_allclose(text_logits[real], token_logits[real], atol=1e-5, rtol=1e-5)
        assert longest < real.shape[1] and not text_logits[:, longest:].any()


def test_a_flag_of_another_kinds_export_is_refused(model_dir_of, tmp_path):
    """--top_k (masked LM) and --max_windows (SQuAD) were ignored by the other exports without a word."""
    from export.saved_model import build_module

    with pytest.raises(ValueError, match=r"--top_k: masked-LM model_dirs \(tasks.run_pretraining\) only; .* is a "
                                         r"classification model_dir"):
        build_module(str(model_dir_of("classifier")), str(tmp_path), top_k=3)
    for flag in ("top_k", "max_windows"):
        with pytest.raises(ValueError, match=f"--{flag}: .* is not a model_dir of the task it serves"):
            build_module(str(model_dir_of("encoder")), str(tmp_path), **{flag: 2})
