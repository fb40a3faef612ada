"""FeatureExtractor's sequence length: 3 up to the model's positions, less the ones RoBERTa skips (its position ids
start after the padding id)."""

import pytest

from tests.tiny_families import roberta_directory


@pytest.fixture(scope="module")
def roberta_514(tmp_path_factory):
    """max_position_embeddings 514, pad id 1: inputs of at most 512 tokens, as roberta-base."""
    return roberta_directory(tmp_path_factory.mktemp("roberta_514"), 514)


def test_a_roberta_model_takes_512_tokens_of_its_514_positions(roberta_514):
    from official_bert.pipelines.feature_extractor import FeatureExtractor

    extractor = FeatureExtractor.from_pretrained(str(roberta_514), layers=[-1], seq_length=512, pooling="cls")
    assert extractor.seq_length == 512
    features, = extractor.extract(["abc"])
    assert features.tokens == ["<s>"] and features.values.shape == (1, 8) and not features.truncated
    for seq_length in (513, 514, 2):
        with pytest.raises(ValueError, match=rf"seq_length={seq_length} must be between 3 and the model's "
                                             r"max_position_embeddings=514 less RoBERTa's 2 padding positions"):
            FeatureExtractor.from_pretrained(str(roberta_514), layers=[-1], seq_length=seq_length)
