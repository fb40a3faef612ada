"""In-graph BERT text preprocessing: WordPiece tokenization and input packing (tensorflow-text)."""

from official_bert.text.pack_inputs import BertPackInputs
from official_bert.text.preprocessor import TextPreprocessor
from official_bert.text.tokenizer import BertTokenizer

__all__ = ["BertPackInputs", "BertTokenizer", "TextPreprocessor"]
