"""official-bert: BERT for TensorFlow 2 and Keras 3 (pre-training, GLUE, NER, SQuAD, serving)."""

from setuptools import find_packages, setup

# Exactly what the library (official_bert/, tasks/, export/, configs/) needs at run time: the packages it imports, plus
# two that its imports need without declaring them (tensorboard, importlib_resources).
INSTALL_REQUIRES = [
    "tensorflow==2.21.0",
    "tensorflow-text==2.21.1",  # 2.21.0 fails to import (icudt77_dat)
    "keras==3.15.1",  # official_bert/keras_compat.py was checked on these Keras and TensorFlow versions
    "tensorflow-datasets==4.9.10",
    "importlib_resources>=6",  # tensorflow-datasets needs it to download (GLUE from TFDS with no --data_dir)
    "absl-py>=2.1",
    "safetensors>=0.4",
    "tensorboard==2.21.0",  # tf.summary for training logs; not a TensorFlow dependency since 2.21
    "numpy>=1.26",
    "flatbuffers>=24.3",  # builds the tokenizer's normalizer table
    "tensorflow-serving-api==2.21.0",  # PredictionLog protos of the SavedModel export's warm-up requests
    "huggingface_hub>=0.30",  # from_pretrained("org/name"): a hub id downloads into its cache
]

# References used only by tests and benchmarks, never at run time (CI installs ".[test]").
TEST_REQUIRES = [
    "pytest>=8",
    "pytest-xdist>=3.5",  # the README's test command runs one worker per core
    "torch==2.13.0",
    "transformers==5.23.0",
    "tokenizers==0.23.3",
    "scikit-learn>=1.5",
    "scipy>=1.13",
    "seqeval==1.2.2",
    "ai-edge-litert>=2.0",  # runs the TFLite conversions (an app's runtime; export.tflite converts without it)
    "keras-hub==0.32.0",  # the peer in benchmarks.run
    "sentencepiece>=0.2",  # the reference ALBERT tokenizer (was installed only as a keras-hub dependency)
    "h5py>=3.10",  # reads model.weights.h5 files (a Keras dependency too)
    "nlp==0.4.0",  # ships the official SQuAD evaluate-v1.1.py / evaluate-v2.0.py scripts (metrics/squad*)
    "ruff==0.17.5",  # the lint (ruff.toml), run by tests/test_lint.py
    "jax==0.10.2",  # Keras' JAX backend on the CPU: tests/models/test_matmul_precision.py
    "sktime==1.2.0",  # ships the UEA archive's BasicMotions and JapaneseVowels (.ts), the time-series tests' real data
]

setup(
    name="official-bert",
    version="0.1.0",
    description="BERT for TensorFlow 2 and Keras 3: pre-training, fine-tuning and raw-text serving.",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(include=["official_bert*", "tasks*", "export*", "configs*"]),
    package_data={"configs": ["*.json"], "tasks": ["demo_data/*"], "official_bert.text": ["data/*.json.gz"]},
    install_requires=INSTALL_REQUIRES,
    extras_require={"test": TEST_REQUIRES},
    license="Apache-2.0",
)
