"""Task data: GLUE readers (TSV files and tensorflow-datasets), CoNLL readers and tagging windows."""

from official_bert.data.conll import ConllExamples, conll_file_path, iob1_to_iob2, label_names, read_conll
from official_bert.data.glue import GlueExamples, glue_file_path, read_glue_tsv
from official_bert.data.glue_tasks import GLUE_TASKS, GlueTask, get_glue_task
from official_bert.data.glue_tfds import examples_from_tfds, load_tfds_glue

__all__ = ["ConllExamples", "GLUE_TASKS", "GlueExamples", "GlueTask", "conll_file_path", "examples_from_tfds",
           "get_glue_task", "glue_file_path", "iob1_to_iob2", "label_names", "load_tfds_glue", "read_conll",
           "read_glue_tsv"]
