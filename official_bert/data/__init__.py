"""Task data: GLUE readers (TSV files and tensorflow-datasets)."""

from official_bert.data.glue import (GlueExamples, examples_from_tfds, glue_file_path, load_tfds_glue,
                                     read_glue_tsv)
from official_bert.data.glue_tasks import GLUE_TASKS, GlueTask, get_glue_task

__all__ = ["GLUE_TASKS", "GlueExamples", "GlueTask", "examples_from_tfds", "get_glue_task", "glue_file_path",
           "load_tfds_glue", "read_glue_tsv"]
