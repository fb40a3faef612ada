"""`export.saved_model --jit_compile`: a raw-text request without padding (a single text, or texts of one length)
runs the model as one XLA program, at its length rounded up to `XLA_SERVING_LENGTH_MULTIPLE` pieces.

On CPU, TensorFlow's per-op kernels cost more than the matmuls at a single text's few dozen pieces; XLA fuses the
elementwise work (all-MiniLM-L6-v2, one 25-piece text on 2 cores: 9.8 ms per forward without XLA, 6.0 ms with).
Batches with padding keep the real-token path (`BertEncoder.encode_real_tokens`), whose token count changes with
every request. TF Serving runs a jit-compiled function only when started with `--xla_cpu_compilation_enabled=true`;
without it, those requests fail. `single_text_warmup_requests` makes TF Serving compile every length at load time.
"""

import numpy as np
import tensorflow as tf

from official_bert.data.padding import trim_inputs

# XLA compiles one program per input shape: at most seq_length / 16 per batch size.
XLA_SERVING_LENGTH_MULTIPLE = 16


class CompiledWithoutPadding:
    """`call(inputs)` as one XLA program, for requests whose packed inputs have no padding.

    Args:
        call: encoder inputs (dict of (batch, length) int32) -> outputs; traced once per length.
    """

    def __init__(self, call):
        self._compiled = tf.function(call, jit_compile=True)

    def __call__(self, packed):
        """Args:
            packed: the request's encoder inputs at (batch, seq_length), each text a prefix of its row.

        Returns: `call` of the inputs cut to the longest text rounded up to `XLA_SERVING_LENGTH_MULTIPLE` pieces.
        """
        rounded, _ = trim_inputs(packed, XLA_SERVING_LENGTH_MULTIPLE)  # (batch, longest rounded up) each
        return self._compiled(rounded)


def single_text_warmup_requests(signature, text_features, seq_length):
    """One request of one text (or pair) per length `CompiledWithoutPadding` compiles: `(signature, {input name:
    np.ndarray})` for `export.warmup`. Each text is the word "the" repeated to fill [CLS] text [SEP] (text_b
    [SEP]) up to that length, one word piece each in BERT's, RoBERTa's and ALBERT's vocabularies.

    Args:
        signature: the signature that compiles (e.g. "serving_default").
        text_features: its string inputs, e.g. ("text", "text_b").
        seq_length: the export's packed length.
    """
    requests = []
    for length in range(XLA_SERVING_LENGTH_MULTIPLE, seq_length + 1, XLA_SERVING_LENGTH_MULTIPLE):
        words = max(1, (length - 1 - len(text_features)) // len(text_features))
        text = np.array([" ".join(["the"] * words)], dtype=object)
        requests.append((signature, {name: text for name in text_features}))
    return requests
