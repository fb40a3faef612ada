"""Reference pieces built with transformers / tokenizers for the family tests: tiny random RoBERTa and ALBERT
checkpoints with a byte-level BPE or a SentencePiece model trained here, and `run_qa.py`'s SQuAD training targets."""

import json

import pytest


def roberta_checkpoint(shared_data, directory, max_positions):
    """A tiny random `RobertaModel` (hidden 32, 2 layers) with a byte-level BPE (500 merges) trained on MRPC text,
    saved in `directory` (created) with room for `max_positions` tokens; returns `directory`."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from benchmarks.tokenizer_throughput import train_byte_level_bpe

    lines = (shared_data / "glue" / "MRPC" / "train.tsv").read_text(encoding="utf-8-sig").splitlines()[1:2000]
    directory.mkdir()
    train_byte_level_bpe([field for line in lines for field in line.split("\t")[3:5]], directory, num_merges=500)
    vocab_size = len(json.loads((directory / "vocab.json").read_text(encoding="utf-8")))
    config = transformers.RobertaConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2,
                                        num_attention_heads=4, intermediate_size=37,
                                        max_position_embeddings=max_positions + 2, type_vocab_size=1, pad_token_id=1)
    torch.manual_seed(0)
    transformers.RobertaModel(config).save_pretrained(directory)
    return directory


def albert_checkpoint(sentences, directory, max_positions, vocab_size=400):
    """A tiny random `AlbertModel` (E 16 -> H 32, 2 layers sharing one block) with a unigram `spiece.model` of
    `vocab_size` pieces trained on `sentences` with ALBERT's options (pad 0, unk 1; [CLS] [SEP] [MASK]; user-defined
    `( ) " - .`), saved in `directory` (created) with room for `max_positions` tokens; returns `directory`."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    spm = pytest.importorskip("sentencepiece")
    directory.mkdir()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences), model_prefix=str(directory / "spiece"), vocab_size=vocab_size,
        model_type="unigram", pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, control_symbols=["[CLS]", "[SEP]", "[MASK]"],
        user_defined_symbols=["(", ")", '"', "-", "."], num_threads=2, minloglevel=2)
    (directory / "spiece.vocab").unlink()
    config = transformers.AlbertConfig(vocab_size=vocab_size, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                                       num_attention_heads=4, intermediate_size=37,
                                       max_position_embeddings=max_positions)
    torch.manual_seed(0)
    transformers.AlbertModel(config).save_pretrained(directory)
    return directory


def run_qa_positions(encoding, w, answer):
    """transformers' `run_qa.py` training targets (prepare_train_features) of window `w`, transcribed:
    `(start, end)` piece positions, (0, 0) when the answer is not inside the window."""
    sequence_ids = encoding.sequence_ids(w)
    offsets = encoding["offset_mapping"][w]
    start_char, end_char = answer["answer_start"], answer["answer_start"] + len(answer["text"])
    token_start = sequence_ids.index(1)
    token_end = len(sequence_ids) - 1 - sequence_ids[::-1].index(1)
    if not (offsets[token_start][0] <= start_char and offsets[token_end][1] >= end_char):
        return 0, 0
    while token_start < len(offsets) and offsets[token_start][0] <= start_char:
        token_start += 1
    while offsets[token_end][1] >= end_char:
        token_end -= 1
    return token_start - 1, token_end + 1
