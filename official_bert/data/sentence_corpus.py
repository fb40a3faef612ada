"""Plain-text pre-training corpora: one sentence per line, a blank line between documents.

Reading them, streamed (`expand_file_patterns`, `read_documents`, `document_chunks`), and writing them
from real text (`squad_documents`, `write_documents`) for tests, benchmarks and quick experiments. The
sentence splitter is deliberately simple (end punctuation followed by space and an upper-case letter, digit
or opening quote); a real corpus would use a proper splitter (e.g. NLTK punkt or spaCy) before
`tasks.create_pretraining_data`.
"""

import json
import logging
import re

import tensorflow as tf

from official_bert.text_files import read_lines, read_text

logger = logging.getLogger(__name__)

# A file of more lines than this without a blank one is warned about: its lines are one document.
ONE_DOCUMENT_LINES = 1000
_warned_one_document = set()  # the files warned about in this process (a corpus is read again each epoch)


def expand_file_patterns(file_patterns):
    """Expands comma-separated globs (or a list of them) to a sorted, de-duplicated list of files.

    Args:
        file_patterns: str ("a/*.txt,b.txt") or a list of str.

    Returns:
        list of str paths, each pattern's matches sorted, in pattern order.

    Raises:
        FileNotFoundError: naming a pattern that matches no file.
    """
    patterns = file_patterns.split(",") if isinstance(file_patterns, str) else list(file_patterns)
    patterns = [str(p).strip() for p in patterns if str(p).strip()]
    if not patterns:
        raise ValueError(f"no input file pattern given (got {file_patterns!r})")
    files, seen = [], set()
    for pattern in patterns:
        matches = sorted(tf.io.gfile.glob(pattern))
        if not matches:
            raise FileNotFoundError(f"no file matches the pattern {pattern!r}")
        for path in matches:
            if path not in seen:
                seen.add(path)
                files.append(path)
    return files


def read_documents(files):
    """Streams documents from text files: one sentence per line, blank lines between documents.

    Lines are stripped; a blank (or whitespace-only) line ends a document, and so does the end of a file;
    empty documents are skipped. A file of more than `ONE_DOCUMENT_LINES` lines and no blank line is warned about
    (once a process): it is one document.

    Args:
        files: list of paths (local or any `tf.io.gfile` file system).

    Yields:
        list of str, the sentences of one document.

    Raises:
        ValueError: a line that is not UTF-8, naming the file and line.
    """
    for path in files:
        document, documents = [], 0
        for _, line in read_lines(path):
            line = line.strip()
            if line:
                document.append(line)
            elif document:
                yield document
                document, documents = [], documents + 1
        if document:
            if not documents and len(document) > ONE_DOCUMENT_LINES and path not in _warned_one_document:
                _warned_one_document.add(path)
                logger.warning("%s: no blank line between its %d lines, so they are one document (a random next "
                               "sentence then comes from another file, or from this one); put a blank line between "
                               "documents", path, len(document))
            yield document


def document_chunks(files, chunk_chars=2_000_000, num_shards=1, shard_index=0):
    """Groups the streamed documents into chunks of about `chunk_chars` characters (at least two documents).

    A chunk is the unit of work (one worker process, one random generator) and the buffer the random next
    sentence is drawn from, so memory stays bounded whatever the corpus size.

    Args:
        files: list of text files (see `read_documents`).
        chunk_chars: a chunk closes once its documents hold this many characters.
        num_shards: keep only every `num_shards`-th document (for input sharding across workers) ...
        shard_index: ... starting at this one.

    Yields:
        list of documents, each a list of str.
    """
    chunk, size = [], 0
    for index, document in enumerate(read_documents(files)):
        if index % num_shards != shard_index:
            continue
        chunk.append(document)
        size += sum(len(s) for s in document)
        if size >= chunk_chars and len(chunk) >= 2:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


_SENTENCE_END = re.compile(r"(?<=[.!?])([\"'\u201d\u2019)\]]*)\s+(?=[\"'\u201c\u2018(\[]?[A-Z0-9])")


def split_sentences(text):
    """Splits a paragraph into sentences at `.`, `!` or `?` (plus closing quotes/brackets) before a capital.

    Args:
        text: str.

    Returns:
        list of non-empty str, stripped; their concatenation (with spaces) is the input's words in order.
    """
    sentences, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        end = match.end(1)
        sentences.append(text[start:end].strip())
        start = match.end()
    sentences.append(text[start:].strip())
    return [s for s in sentences if s]


def squad_documents(squad_json, max_documents=None):
    """The contexts of a SQuAD file as documents (one per paragraph), each a list of sentences.

    Args:
        squad_json: path of a SQuAD v1.1/v2.0 JSON file.
        max_documents: stop after this many paragraphs (None: all).

    Returns:
        list of documents, each a non-empty list of str.
    """
    data = json.loads(read_text(squad_json))
    if "data" not in data:
        raise ValueError(f"{squad_json}: no field 'data'; expected a SQuAD JSON file")
    documents = []
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            sentences = split_sentences(paragraph["context"].replace("\n", " "))
            if sentences:
                documents.append(sentences)
            if max_documents is not None and len(documents) >= max_documents:
                return documents
    return documents


def write_documents(path, documents):
    """Writes documents in the pre-training text format: one sentence per line, a blank line after each document.

    Args:
        path: output file.
        documents: iterable of lists of str (no str may contain a newline).
    """
    with open(path, "w", encoding="utf-8") as f:
        for index, sentences in enumerate(documents):
            for sentence in sentences:
                if "\n" in sentence or not sentence.strip():
                    raise ValueError(f"document {index}: sentence {sentence!r} is empty or holds a newline")
                f.write(sentence + "\n")
            f.write("\n")
