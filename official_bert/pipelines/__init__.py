"""Raw text in, answers out: a tokenizer, a task model and the post-processing, in Python."""

from official_bert.pipelines.embedder import Embedder
from official_bert.pipelines.entity_tagger import EntityTagger

__all__ = ["Embedder", "EntityTagger"]
