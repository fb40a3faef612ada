"""RoBERTa on the span tasks: CoNLL tagging and SQuAD features equal transformers' (RobertaTokenizerFast with
`add_prefix_space=True` and `is_split_into_words`; run_qa.py's `<s> Q </s></s> C </s>` windows and targets), and
both tasks run (train, evaluate, predict) from a tiny RoBERTa checkpoint and export raw-text signatures that
answer as the Keras model."""

import json

import pytest
import tensorflow as tf

from hf_references import roberta_checkpoint
from official_bert.data.conll import read_conll
from official_bert.data.squad import build_features
from official_bert.data.squad_examples import SquadExample
from official_bert.data.tagging_dataset import build_windows, word_pieces
from official_bert.text.preprocessing import tokenizer_from_files
from span_task_checks import (assert_squad_export_answers_as_postprocess, assert_squad_windows_equal_run_qa,
                              assert_tagger_export_equals_entity_tagger, assert_tagging_windows_equal_reference,
                              conll_sentences, squad_sample, write_squad_file)
from tests.tasks.forked_commands import run_python

pytestmark = pytest.mark.slow
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

SEQ = 64
TAG_SEQ = 32  # short enough that some CoNLL sentences take two windows
STRIDE, QUERY = 16, 24  # SQuAD: doc_stride (a step, in pieces) and max_query_length


@pytest.fixture(scope="module")
def checkpoint(shared_data, tmp_path_factory):
    return roberta_checkpoint(shared_data, tmp_path_factory.mktemp("roberta") / "checkpoint", SEQ)


@pytest.fixture(scope="module")
def bpe(checkpoint):
    return tokenizer_from_files(str(checkpoint / "vocab.json"), False)


# --- tagging features ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("seq_length", [TAG_SEQ, 128])
def test_tagging_windows_equal_roberta_tokenizer_fast_with_prefix_space(shared_data, checkpoint, bpe, tmp_path,
                                                                        seq_length):
    """50 CoNLL sentences: ids and first-piece labels equal transformers' (`add_prefix_space=True`,
    `is_split_into_words=True`, `truncation=True, max_length=seq_length`); a sentence longer than a window is cut
    into windows of whole words whose pieces put back together are transformers' untruncated ones."""
    path = tmp_path / "train.txt"
    path.write_text(conll_sentences(shared_data / "conll2003" / "hf-iob2" / "train.txt", 50))
    data = read_conll(str(path))
    labels = [[hash(t) % 7 for t in tags] for tags in data.tags]
    windows = build_windows(word_pieces(bpe, data.words, layout="roberta"), seq_length,
                            bpe.get_special_tokens_dict(), labels=labels)
    reference = transformers.RobertaTokenizerFast.from_pretrained(str(checkpoint), add_prefix_space=True)
    whole, split = assert_tagging_windows_equal_reference(windows, data.words, labels, reference)
    assert split >= 3 and whole >= 10 if seq_length == TAG_SEQ else whole >= 45 and not split


# --- SQuAD features --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def squad_examples(shared_data, checkpoint):
    return squad_sample(shared_data, transformers.RobertaTokenizerFast.from_pretrained(str(checkpoint)), QUERY)


def test_squad_windows_and_targets_equal_run_qa(checkpoint, bpe, squad_examples):
    """Windows, offsets and training targets equal run_qa.py's with RobertaTokenizerFast; type ids are all 0."""
    features, stats = build_features(squad_examples, bpe, SEQ, STRIDE, QUERY, is_training=True, layout="roberta")
    assert stats["truncated_questions"] == 0 and stats["skipped_examples"] == 0
    assert not features.inputs["input_type_ids"].any()
    reference = transformers.RobertaTokenizerFast.from_pretrained(str(checkpoint))
    windows, answered = assert_squad_windows_equal_run_qa(features, squad_examples, reference, SEQ, STRIDE, 4)
    assert windows > 2 * len(squad_examples) and answered >= len(squad_examples)


# --- runs and exports ------------------------------------------------------------------------------------------


def _run(task, model_dir, checkpoint, seq_length, do_predict=True):
    from official_bert.runner import RunConfig, run

    config = RunConfig(model_dir=str(model_dir), init_checkpoint=str(checkpoint), max_seq_length=seq_length,
                       train_batch_size=8, eval_batch_size=32, num_train_steps=2, checkpoint_steps=100,
                       do_predict=do_predict)
    return run(task, config)


@pytest.fixture(scope="module")
def ner_run(shared_data, checkpoint, tmp_path_factory):
    from official_bert.tasks.tagging import TaggingTask

    root = tmp_path_factory.mktemp("ner")
    data = root / "data"
    data.mkdir()
    for name, count in (("train.txt", 80), ("test.txt", 30)):
        (data / name).write_text(conll_sentences(shared_data / "conll2003" / "hf-iob2" / name, count))
    texts = root / "texts.txt"
    texts.write_text("Peter Blackburn flew to Brussels.\nThe EU rejects German calls , said Werner Zwingmann.\n")
    results = _run(TaggingTask(str(data), predict_text_file=str(texts)), root / "model", checkpoint, TAG_SEQ)
    return root, results


def test_tagging_runs_from_roberta_and_its_export_tags_as_the_model(ner_run, tmp_path):
    from export.saved_model import build_module
    from official_bert.pipelines.entity_tagger import EntityTagger

    root, results = ner_run
    assert results["num_sentences"] == 30 and 0.0 <= results["f1"] <= 1.0
    predicted = (root / "model" / "predictions" / "test.txt").read_text().strip().split("\n\n")
    assert len(predicted) == 30
    lines = (root / "model" / "predictions" / "texts.jsonl").read_text().splitlines()
    assert [json.loads(line)["text"] for line in lines][0] == "Peter Blackburn flew to Brussels."

    texts = ["Peter Blackburn flew to Brussels.", "  The EU rejects German calls, said Werner Zwingmann.",
             "Zürich's café", "EU  Werner\tZwingmann \n said. ", ""]
    module = build_module(str(root / "model"), str(tmp_path))
    out = module.serving_default(tf.constant(texts))
    tagger = EntityTagger.from_model_dir(str(root / "model"))
    assert tagger.layout == "roberta"
    split = assert_tagger_export_equals_entity_tagger(out, tagger, tagger.model, texts, TAG_SEQ)
    assert split[0][1] == [(0, 5), (6, 15), (16, 20), (21, 23), (24, 33)]  # "Brussels." is one word, as in HF
    # whitespace pieces start no word and widen no span; a lone "Ġ" before "Zw" (no "ĠZw" in this vocab) is the
    # first piece of "Zwingmann", as in training
    assert [texts[3][a:b] for a, b in split[3][1]] == ["EU", "Werner", "Zwingmann", "said."]
    assert split[1][0][0] == word_pieces(tagger.tokenizer, [["The"]], layout="roberta")[0][0]
    zwingmann = word_pieces(tagger.tokenizer, [["Zwingmann"]], layout="roberta")[0][0]
    assert split[1][0][7][:len(zwingmann)] == zwingmann and tagger.tokenizer.get_vocab()[zwingmann[0]] == "\u0120"


@pytest.fixture(scope="module")
def squad_run(checkpoint, squad_examples, tmp_path_factory):
    from official_bert.tasks.squad import SquadTask

    root = tmp_path_factory.mktemp("squad")
    data = write_squad_file(squad_examples, root / "squad.json")
    task = SquadTask(train_file=str(data), predict_file=str(data), doc_stride=STRIDE, max_query_length=QUERY)
    results = _run(task, root / "model", checkpoint, SEQ)
    return root, results


def test_squad_runs_from_roberta_and_its_export_answers_as_the_model(squad_run, squad_examples, bpe, shared_data,
                                                                       tmp_path):
    from export.saved_model import build_module, save
    from official_bert import model_dir as model_dirs

    root, results = squad_run
    assert results["num_examples"] == 20 and results["num_windows"] > 40 and 0.0 <= results["f1"] <= 100.0
    predictions = json.loads((root / "model" / "predictions.json").read_text())
    assert sorted(predictions) == sorted(e.qas_id for e in squad_examples)

    examples = squad_examples[:4]
    module = build_module(str(root / "model"), str(tmp_path))
    questions, contexts = [e.question for e in examples], [e.context for e in examples]
    out = module.serving_default(tf.constant(questions), tf.constant(contexts))
    # the export reads all the doc-stride windows of each question, as run_squad's post-processing does
    features, _ = build_features(examples, bpe, SEQ, STRIDE, QUERY, layout="roberta")
    loaded = model_dirs.load_model_dir(str(root / "model"))
    counts = assert_squad_export_answers_as_postprocess(module, out, examples, features, loaded.model)
    assert (counts > 1).all() and not out["truncated"].numpy().any()  # every context is longer than one window

    version = save(module, str(tmp_path / "export"))  # what `export` writes: the module built, saved
    check = run_python([shared_data.parent / "tools" / "session_loader_check.py", version], timeout=300)
    assert check.returncode == 0 and "FAILED" not in check.stdout, check.stdout[-2000:] + check.stderr[-2000:]


def test_roberta_squad_layout_leaves_room_for_four_special_tokens(bpe):
    example = SquadExample("q", "Who sat?", "The cat sat on the mat.", [{"text": "The cat", "answer_start": 0}])
    with pytest.raises(ValueError, match="5 special tokens|4 special tokens"):
        build_features([example], bpe, max_seq_length=10, doc_stride=2, max_query_length=6, layout="roberta")
    features, _ = build_features([example], bpe, max_seq_length=12, doc_stride=2, max_query_length=6,
                                 is_training=True, layout="roberta")
    ids = features.inputs["input_word_ids"][0].tolist()
    assert ids[0] == 0 and ids.count(2) == 3 and ids[ids.index(2) + 1] == 2
