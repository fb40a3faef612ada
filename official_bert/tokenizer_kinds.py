"""The three tokenizer kinds a model family reads, their files, and which kind a vocab file is.

WordPiece (BERT, DistilBERT: `vocab.txt`), RoBERTa's byte-level BPE (`vocab.json` + `merges.txt`) and ALBERT's
SentencePiece (`spiece.model`). A model's kind is its config's (`BertConfig.tokenizer_kind`); `tokenizer_kind`
tells it from a vocab file's name where no config is at hand.

Examples:

>>> tokenizer_kind("out/sst2_roberta/vocab.json")
'bpe'
"""

WORDPIECE, BPE, SENTENCEPIECE = "wordpiece", "bpe", "sentencepiece"
TOKENIZER_KINDS = (WORDPIECE, BPE, SENTENCEPIECE)

WORDPIECE_FILE = "vocab.txt"
BPE_FILES = ("vocab.json", "merges.txt")  # RoBERTa's byte-level BPE
SENTENCEPIECE_FILE = "spiece.model"  # ALBERT's
GOOGLE_SENTENCEPIECE_FILE = "30k-clean.model"  # the same model, as Google's ALBERT releases name it
XLM_ROBERTA_FILE = "sentencepiece.bpe.model"  # XLM-RoBERTa's (no in-graph tokenizer here)

# The file of each kind that a model_dir keeps and `text.preprocessing.tokenizer_from_files` reads (a BPE's
# `merges.txt` lies beside its `vocab.json`).
VOCAB_FILES = {WORDPIECE: WORDPIECE_FILE, BPE: BPE_FILES[0], SENTENCEPIECE: SENTENCEPIECE_FILE}
# transformers' tokenizer class of each kind (`tokenizer_config.json`'s "tokenizer_class").
HF_TOKENIZER_CLASSES = {WORDPIECE: "BertTokenizer", BPE: "RobertaTokenizer", SENTENCEPIECE: "AlbertTokenizer"}
# What each kind is, in error messages.
DESCRIPTIONS = {WORDPIECE: "WordPiece vocabulary", BPE: "byte-level BPE", SENTENCEPIECE: "SentencePiece model"}


def tokenizer_kind(vocab_file, config=None) -> str:
    """The kind of tokenizer a model's vocab file is, one of `TOKENIZER_KINDS`.

    Args:
        vocab_file: `vocab.txt` (or any WordPiece list), a BPE `vocab.json`, or a SentencePiece `*.model`.
        config: the model's `BertConfig`, when known: its `tokenizer_kind` decides, not the file's name.
    """
    if config is not None:
        return config.tokenizer_kind
    name = str(vocab_file or "")
    if name.endswith(".model"):
        return SENTENCEPIECE
    if name.endswith(".json"):
        return BPE
    return WORDPIECE
