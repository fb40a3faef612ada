"""A raw-text request's model run at the request's own length, not at the export's `seq_length` pieces.

`RequestLengthModel` cuts a request's packed inputs to its longest text. A request with padding (texts of unequal
length) then runs on its real tokens only (the encoder's and the models' `real_tokens=True`):
on the SST-2 dev sentences in requests of 32, half the positions are padding. A request without padding (one text,
or texts of one length) runs the plain model, where packing would only add gathers.

`export.saved_model --jit_compile` makes that plain model one XLA program, at the length rounded up to
`XLA_SERVING_LENGTH_MULTIPLE` pieces. On CPU, TensorFlow's per-op kernels cost more than the matmuls at a single
text's few dozen pieces, and XLA fuses the elementwise work (all-MiniLM-L6-v2, one 25-piece text on 2 cores:
9.8 ms per forward without XLA, 6.0 ms with). The real-token path stays as it is: its token count changes with
every request. TF Serving runs a jit-compiled function only when started with
`--xla_cpu_compilation_enabled=true`; without it, those requests fail. `single_text_warmup_requests` makes TF
Serving compile every length at load time.
"""

import numpy as np
import tensorflow as tf

from official_bert.data.padding import trim_inputs

# XLA compiles one program per input shape: at most seq_length / 16 per batch size.
XLA_SERVING_LENGTH_MULTIPLE = 16


class RequestLengthModel:
    """A model on a request's packed inputs, run at the request's longest text (see the module notes).

    Args:
        call: encoder inputs (dict of (batch, length) int32) -> outputs, the plain model at inference.
        call_real_tokens: the same on the real tokens only (equal at the real tokens).
        jit_compile: run `call` as one XLA program for requests without padding.
        per_token: whether the outputs have the sequence axis (batch, length, ...); then the XLA program's
            outputs, at the rounded-up length, are cut back to the longest text.
    """

    def __init__(self, call, call_real_tokens, jit_compile=False, per_token=True):
        # Run as written, not through AutoGraph: they only call a Keras model, and AutoGraph cannot read the source of
        # two lambdas on one line (the modules') and warned for each, 36 lines an export.
        call = tf.autograph.experimental.do_not_convert(call)
        self._call = call
        self._call_real_tokens = tf.autograph.experimental.do_not_convert(call_real_tokens)
        self._compiled = tf.function(call, jit_compile=True) if jit_compile else None
        self._per_token = per_token

    def __call__(self, packed):
        """Args:
            packed: the request's encoder inputs at (batch, seq_length), each text a prefix of its row.

        Returns:
            `(outputs, inputs)`: the model's outputs at the longest text ((batch, longest, ...) for `per_token`),
            and the inputs cut to that length, (batch, longest) each.
        """
        inputs, _ = trim_inputs(packed)  # (batch, longest) each

        def without_padding():
            if self._compiled is None:
                return self._call(inputs)
            rounded, _ = trim_inputs(packed, XLA_SERVING_LENGTH_MULTIPLE)  # (batch, longest rounded up) each
            outputs = self._compiled(rounded)
            return outputs[:, :tf.shape(inputs["input_mask"])[1]] if self._per_token else outputs

        outputs = tf.cond(tf.reduce_sum(1 - inputs["input_mask"]) > 0,  # padding: ops on the serving allow-list
                          lambda: self._call_real_tokens(inputs), without_padding)
        return outputs, inputs


def single_text_warmup_requests(signature, text_features, seq_length):
    """One request of one text (or pair) per length the XLA program compiles for: `(signature, {input name:
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
