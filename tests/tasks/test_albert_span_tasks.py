"""ALBERT on the span tasks: CoNLL tagging and SQuAD features equal transformers' (AlbertTokenizerFast with
`is_split_into_words`; run_qa.py's `[CLS] Q [SEP] C [SEP]` windows, offsets and targets), and both tasks run (train,
evaluate, predict) from a tiny ALBERT checkpoint with a SentencePiece model trained here, and export raw-text
signatures that answer as the Keras model and load in TF Serving's session loader (both exports in one fresh
process)."""

import json

import pytest
import tensorflow as tf

from hf_references import albert_checkpoint
from official_bert.data.conll import read_conll
from official_bert.data.squad import build_features
from official_bert.data.squad_examples import read_squad_json
from official_bert.data.tagging_dataset import build_windows, word_pieces
from official_bert.text.preprocessing import tokenizer_from_files
from span_task_checks import (assert_squad_export_answers_as_postprocess, assert_squad_windows_equal_run_qa,
                              assert_tagger_export_equals_entity_tagger, assert_tagging_windows_equal_reference,
                              conll_sentences, squad_sample, write_squad_file)
from tests.export.session_loader import tool_checks

pytestmark = pytest.mark.slow
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")

SEQ = 64
TAG_SEQ = 32  # short enough that some CoNLL sentences take two windows
STRIDE, QUERY = 16, 24  # SQuAD: doc_stride (a step, in pieces) and max_query_length


@pytest.fixture(scope="module")
def checkpoint(shared_data, tmp_path_factory):
    conll = read_conll(str(shared_data / "conll2003" / "hf-iob2" / "train.txt")).words[:3000]
    squad = read_squad_json(str(shared_data / "squad" / "v1.1" / "dev-v1.1.json"))[:3000]
    sentences = [" ".join(words) for words in conll] + sorted({e.context for e in squad}) + [e.question for e in squad]
    return albert_checkpoint(sentences, tmp_path_factory.mktemp("albert") / "checkpoint", SEQ, vocab_size=600)


@pytest.fixture(scope="module")
def sentencepiece(checkpoint):
    return tokenizer_from_files(str(checkpoint / "spiece.model"), True)


@pytest.fixture(scope="module")
def reference(checkpoint):
    return transformers.AlbertTokenizerFast.from_pretrained(str(checkpoint))


# --- tagging features ----------------------------------------------------------------------------------------


def test_tagging_windows_equal_albert_tokenizer_fast(shared_data, sentencepiece, reference, tmp_path):
    """50 CoNLL sentences: ids and first-piece labels equal transformers' (`is_split_into_words=True`); a sentence
    longer than a window is cut into windows of whole words whose pieces put back together are transformers'."""
    path = tmp_path / "train.txt"
    path.write_text(conll_sentences(shared_data / "conll2003" / "hf-iob2" / "train.txt", 50))
    data = read_conll(str(path))
    labels = [[hash(t) % 7 for t in tags] for tags in data.tags]
    windows = build_windows(word_pieces(sentencepiece, data.words), TAG_SEQ, sentencepiece.get_special_tokens_dict(),
                            labels=labels)
    whole, split = assert_tagging_windows_equal_reference(windows, data.words, labels, reference)
    assert split >= 3 and whole >= 10


# --- SQuAD features --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def squad_examples(shared_data, reference):
    return squad_sample(shared_data, reference, QUERY)


def test_squad_windows_offsets_and_targets_equal_run_qa(sentencepiece, reference, squad_examples):
    """Windows, type ids, offsets and training targets equal run_qa.py's with AlbertTokenizerFast."""
    features, stats = build_features(squad_examples, sentencepiece, SEQ, STRIDE, QUERY, is_training=True)
    assert stats["truncated_questions"] == 0 and stats["skipped_examples"] == 0
    windows, answered = assert_squad_windows_equal_run_qa(features, squad_examples, reference, SEQ, STRIDE, 3)
    assert windows > 2 * len(squad_examples) and answered >= len(squad_examples)


# --- runs and exports ------------------------------------------------------------------------------------------


def _run(task, model_dir, checkpoint, seq_length):
    from official_bert.runner import RunConfig, run

    config = RunConfig(model_dir=str(model_dir), init_checkpoint=str(checkpoint), max_seq_length=seq_length,
                       train_batch_size=8, eval_batch_size=32, num_train_steps=2, checkpoint_steps=100,
                       do_predict=True)
    return run(task, config)


@pytest.fixture(scope="module")
def tagging(shared_data, checkpoint, tmp_path_factory):
    """A tagging run from the ALBERT checkpoint and its serving module, saved: (root, results, module, version)."""
    from export.saved_model import build_module, save
    from official_bert.tasks.tagging import TaggingTask

    root = tmp_path_factory.mktemp("albert_tagging")
    data = root / "data"
    data.mkdir()
    for name, count in (("train.txt", 80), ("test.txt", 30)):
        (data / name).write_text(conll_sentences(shared_data / "conll2003" / "hf-iob2" / name, count))
    texts_file = root / "texts.txt"
    texts_file.write_text("Peter Blackburn flew to Brussels.\nThe EU rejects German calls , said Werner Zwingmann.\n")
    results = _run(TaggingTask(str(data), predict_text_file=str(texts_file)), root / "model", checkpoint, TAG_SEQ)
    module = build_module(str(root / "model"), str(root))  # what `export` builds, saved as it saves it
    return root, results, module, save(module, str(root / "export"))


@pytest.fixture(scope="module")
def squad(checkpoint, squad_examples, tmp_path_factory):
    """A SQuAD run from the ALBERT checkpoint and its serving module, saved: (root, results, module, version)."""
    from export.saved_model import build_module, save
    from official_bert.tasks.squad import SquadTask

    root = tmp_path_factory.mktemp("albert_squad")
    data = write_squad_file(squad_examples, root / "squad.json")
    task = SquadTask(train_file=str(data), predict_file=str(data), doc_stride=STRIDE, max_query_length=QUERY)
    results = _run(task, root / "model", checkpoint, SEQ)
    module = build_module(str(root / "model"), str(root))
    return root, results, module, save(module, str(root / "export"))


@pytest.fixture(scope="module")
def session_checks(tagging, squad):
    """`session_loader_check.py` on both exports, in one fresh process: version -> (exit code, what it printed)."""
    return tool_checks([tagging[3], squad[3]])[0]


def _assert_session_check_passed(session_checks, version):
    code, printed = session_checks[str(version)]
    assert code == 0 and "FAILED" not in printed, printed[-2000:]


def test_tagging_runs_from_albert_and_its_export_tags_as_the_model(tagging, session_checks):
    from official_bert.pipelines.entity_tagger import EntityTagger

    root, results, module, version = tagging
    assert results["num_sentences"] == 30 and 0.0 <= results["f1"] <= 1.0
    assert len((root / "model" / "predictions" / "test.txt").read_text().strip().split("\n\n")) == 30

    texts = ["Peter Blackburn flew to Brussels.", "  The EU (Brussels) rejects it.",
             "Zürich's café", "EU  Werner\tZwingmann \n said. ", ""]
    out = module.serving_default(tf.constant(texts))
    tagger = EntityTagger.from_model_dir(str(root / "model"))
    split = assert_tagger_export_equals_entity_tagger(out, tagger, tagger.model, texts, TAG_SEQ)
    # words start at "▁" pieces and at the user-defined symbols ( ) " - .
    assert [texts[0][a:b] for a, b in split[0][1]] == ["Peter", "Blackburn", "flew", "to", "Brussels", "."]
    assert [texts[1][a:b] for a, b in split[1][1]][1:6] == ["EU", "(", "Brussels", ")", "rejects"]
    assert [texts[3][a:b] for a, b in split[3][1]] == ["EU", "Werner", "Zwingmann", "said", "."]
    _assert_session_check_passed(session_checks, version)
    # LiteRT: the offsets need ops it has no kernel for, and the conversion names them; token ids convert
    from export.tflite import convert

    with pytest.raises(ValueError, match="needs ops TFLite lacks.*UnicodeDecodeWithOffsets"):
        convert(version, signature="serving_default")
    assert convert(version, signature="serve_tokens")


def test_squad_runs_from_albert_and_its_export_answers_as_the_model(squad, sentencepiece, squad_examples,
                                                                    session_checks):
    from official_bert import model_dir as model_dirs

    root, results, module, version = squad
    assert results["num_examples"] == 20 and results["num_windows"] > 40 and 0.0 <= results["f1"] <= 100.0
    predictions = json.loads((root / "model" / "predictions.json").read_text())
    assert sorted(predictions) == sorted(e.qas_id for e in squad_examples)

    examples = squad_examples[:4]
    questions, contexts = [e.question for e in examples], [e.context for e in examples]
    out = module.serving_default(tf.constant(questions), tf.constant(contexts))
    # the export reads all the doc-stride windows of each question, as run_squad's post-processing does
    features, _ = build_features(examples, sentencepiece, SEQ, STRIDE, QUERY)
    model = model_dirs.load_model_dir(str(root / "model")).model
    assert (assert_squad_export_answers_as_postprocess(module, out, examples, features, model) > 1).any()
    _assert_session_check_passed(session_checks, version)
