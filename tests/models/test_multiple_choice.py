"""BertMultipleChoice: logits equal Hugging Face BertForMultipleChoice's on the real all-MiniLM-L6-v2, permuting the
choices permutes the logits, each logit is its pair's own score, missing choices are masked, config round trip."""

import json

import keras
import numpy as np
import pytest

from official_bert import BertEncoder
from official_bert.checkpoints import head_specs, load_encoder, load_task_weights
from official_bert.models import BertMultipleChoice
from official_bert.layers.attention import MASKED_LOGIT

HF_NAMES = (("input_ids", "input_word_ids"), ("attention_mask", "input_mask"), ("token_type_ids", "input_type_ids"))


def _random_inputs(batch, choices, seq, vocab=100, seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, seq + 1, (batch, choices))
    mask = (np.arange(seq)[None, None, :] < lengths[:, :, None]).astype(np.int32)  # (batch, choices, seq)
    type_ids = (np.arange(seq)[None, None, :] >= lengths[:, :, None] // 2).astype(np.int32) * mask
    return {"input_word_ids": rng.integers(1, vocab, (batch, choices, seq)).astype(np.int32) * mask,
            "input_mask": mask, "input_type_ids": type_ids}


@pytest.fixture(scope="module")
def swag_pairs(shared_data):
    """The 10 SWAG sample rows tokenized as run_swag.py does: (context, sent2 + " " + ending_i), seq 64."""
    transformers = pytest.importorskip("transformers")
    rows = [json.loads(line) for line in (shared_data / "swag" / "sample.jsonl").read_text().splitlines()]
    tokenizer = transformers.BertTokenizerFast.from_pretrained(str(shared_data / "all-MiniLM-L6-v2"))
    first = [row["sent1"] for row in rows for _ in range(4)]
    second = [f"{row['sent2']} {row[f'ending{i}']}" for row in rows for i in range(4)]
    encoded = tokenizer(first, second, truncation="longest_first", max_length=64, padding="max_length",
                        return_tensors="np")
    inputs = {ours: encoded[theirs].reshape(len(rows), 4, 64).astype(np.int32) for theirs, ours in HF_NAMES}
    return inputs, np.array([row["label"] for row in rows])


@pytest.fixture(scope="module")
def minilm_pair(shared_data, tmp_path_factory):
    """transformers' BertForMultipleChoice on all-MiniLM-L6-v2 with a seeded head (a non-zero bias), saved with
    save_pretrained, and ours loaded from that directory."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    path = tmp_path_factory.mktemp("minilm_multiple_choice")
    torch.manual_seed(0)
    reference = transformers.BertForMultipleChoice.from_pretrained(
        str(shared_data / "all-MiniLM-L6-v2"), attn_implementation="eager").eval()
    with torch.no_grad():
        reference.classifier.weight.normal_(0.0, 0.5)  # large enough that the logits differ clearly per choice
        reference.classifier.bias.fill_(0.3)
    reference.save_pretrained(path, safe_serialization=True)
    encoder, _ = load_encoder(str(path))
    model = BertMultipleChoice(encoder)
    assert load_task_weights(model.encoder, head_specs(model), str(path))  # the head came from classifier.*
    return torch, reference, model


@pytest.mark.slow
def test_logits_and_loss_equal_transformers_bert_for_multiple_choice_on_real_weights(minilm_pair, swag_pairs):
    torch, reference, model = minilm_pair
    inputs, labels = swag_pairs
    with torch.no_grad():
        expected = reference(**{theirs: torch.tensor(inputs[ours], dtype=torch.long) for theirs, ours in HF_NAMES},
                             labels=torch.tensor(labels))
    logits = np.asarray(model(inputs, training=False))
    assert logits.shape == (10, 4) and logits.dtype == np.float32
    difference = np.abs(logits - expected.logits.numpy()).max()
    print(f"max |ours - transformers| over 10 SWAG questions x 4 choices: {difference:.2e}")
    assert difference < 1e-5
    assert np.std(logits) > 0.1  # the choices are told apart: the comparison is not of near-constants
    model.compile()  # loss="auto": cross-entropy over the choices
    loss = model.evaluate(inputs, labels, batch_size=10, verbose=0, return_dict=True)["loss"]
    assert loss == pytest.approx(float(expected.loss), rel=1e-5)


def test_permuting_the_choices_permutes_the_logits_and_each_logit_is_its_pairs_own_score(minilm_pair, swag_pairs):
    _, _, model = minilm_pair
    inputs, _ = swag_pairs
    inputs = {name: value[:3] for name, value in inputs.items()}
    logits = np.asarray(model(inputs, training=False))  # (3, 4)
    order = np.array([2, 0, 3, 1])
    permuted = np.asarray(model({name: value[:, order] for name, value in inputs.items()}, training=False))
    np.testing.assert_allclose(permuted, logits[:, order], atol=1e-5)
    for choice in range(4):  # one pair alone: a question with one choice
        single = np.asarray(model({name: value[:, choice:choice + 1] for name, value in inputs.items()},
                                  training=False))
        np.testing.assert_allclose(single[:, 0], logits[:, choice], atol=1e-5)


def test_missing_choices_are_masked_never_scored(tiny_config):
    keras.utils.set_random_seed(0)
    model = BertMultipleChoice(BertEncoder(tiny_config))
    inputs = _random_inputs(3, 5, 8)
    full = np.asarray(model(inputs, training=False))
    gapped = {name: value.copy() for name, value in inputs.items()}
    for name in gapped:  # question 0 has 3 choices, question 2 has 1: the rest are all-zero rows
        gapped[name][0, 3:] = 0
        gapped[name][2, 1:] = 0
    logits = np.asarray(model(gapped, training=False))
    np.testing.assert_array_equal(logits[0, 3:], MASKED_LOGIT)
    np.testing.assert_array_equal(logits[2, 1:], MASKED_LOGIT)
    np.testing.assert_allclose(logits[0, :3], full[0, :3], atol=1e-5)  # the others are scored as before
    np.testing.assert_allclose(logits[1], full[1], atol=1e-5)
    np.testing.assert_allclose(logits[2, 0], full[2, 0], atol=1e-5)
    probabilities = np.asarray(keras.ops.softmax(logits, axis=-1))
    assert probabilities[0, 3:].max() == 0.0 and probabilities[2, 0] == pytest.approx(1.0)
    # A missing choice takes no share of the loss, and the loss stays finite.
    model.compile()
    labels = np.array([1, 4, 0])
    loss = model.evaluate(gapped, labels, batch_size=3, verbose=0, return_dict=True)["loss"]
    assert np.isfinite(loss)


def test_float32_logits_under_mixed_precision_and_any_number_of_choices(tiny_config):
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        model = BertMultipleChoice(BertEncoder(tiny_config))
        for choices in (1, 2, 7):
            logits = model(_random_inputs(2, choices, 6))
            assert tuple(logits.shape) == (2, choices) and logits.dtype == "float32"
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_get_config_and_keras_file_round_trip(tiny_config, tmp_path):
    model = BertMultipleChoice(BertEncoder(tiny_config), dropout_rate=0.2)
    clone = BertMultipleChoice.from_config(model.get_config())
    assert isinstance(clone, BertMultipleChoice) and clone.dropout_rate == 0.2
    model.save(tmp_path / "mc.keras")
    restored = keras.models.load_model(tmp_path / "mc.keras")
    x = _random_inputs(2, 3, 7)
    np.testing.assert_allclose(np.asarray(restored(x)), np.asarray(model(x)), atol=1e-6)


def test_head_specs_name_the_classifier(tiny_config):
    model = BertMultipleChoice(BertEncoder(tiny_config))
    specs = head_specs(model)
    assert [spec.hf_name for spec in specs] == ["classifier.weight", "classifier.bias"]
    assert [spec.stored_shape("hf") for spec in specs] == [(1, 32), (1,)]
