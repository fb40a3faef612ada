"""In-graph text preprocessing: WordPiece (tensorflow-text) and RoBERTa's byte-level BPE, and input packing.

`load_preprocessor(directory, seq_length)` is the one entry point for every family.
"""

from official_bert.text.bpe_tokenizer import BytePairTokenizer
from official_bert.text.pack_inputs import BertPackInputs
from official_bert.text.preprocessing import Preprocessor, load_preprocessor, text_preprocessor
from official_bert.text.sentencepiece_tokenizer import SentencepieceTokenizer
from official_bert.text.tokenizer import BertTokenizer

__all__ = ["BertPackInputs", "BertTokenizer", "BytePairTokenizer", "Preprocessor", "SentencepieceTokenizer",
           "load_preprocessor", "text_preprocessor"]
