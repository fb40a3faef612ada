"""Float32 BERT against transformers on Keras' JAX backend, at each matmul precision (issue 48, point 4).

    KERAS_BACKEND=jax python -m benchmarks.gpu_float32_parity            # BERT-Base shapes, on a GPU
    KERAS_BACKEND=jax python -m benchmarks.gpu_float32_parity --small    # a 2-layer, hidden-64 BERT (CPU smoke test)

A random `BertModel` of transformers (float32, its own initialisation, seed 0) is written with `save_pretrained`
and read by `official_bert.checkpoints.load_encoder`; both run one batch of --batch_size x --seq_length random ids
whose rows end in padding (a quarter of each). transformers runs on PyTorch (CUDA where present) with TF32 matmuls
off, PyTorch's default. Ours runs on JAX (the GPU where present) three times:
  ours             the library's default for a float32 model: every matmul at "highest" (full float32) precision
                   (`official_bert.models.matmul_precision`);
  jax_default      `jax.default_matmul_precision("default")` around the call: what ours ran before, TF32 on a GPU;
  user_tf32        `jax.default_matmul_precision("tensorfloat32")`: the user's opt-in to TF32's speed.
Prints the largest |difference| from transformers of `sequence_output` (real tokens) and `pooled_output`, and
writes them as JSON to --out (default $OUT/gpu_float32_parity.json where OUT is set). Needs JAX, torch and
transformers; no TensorFlow.
"""

import argparse
import contextlib
import json
import os
import sys
import tempfile

import numpy as np

BASE = dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072)
SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)
PRECISIONS = {"ours": None, "jax_default": "default", "user_tf32": "tensorfloat32"}


def batch(batch_size, seq_length, vocab_size, seed=0):
    """(ids, mask) int32 [batch_size, seq_length]: random ids (ids 0-999 left out: special and unused tokens),
    the last quarter of each row padding."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, vocab_size, (batch_size, seq_length)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[:, seq_length - seq_length // 4:] = 0
    return ids * mask, mask


def reference(model_dir, shape, ids, mask):
    """transformers' (sequence_output, pooled_output) of a new random `BertModel` written to `model_dir`."""
    import torch
    import transformers

    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False  # (PyTorch's default)
    model = transformers.BertModel(transformers.BertConfig(**shape)).eval()
    model.save_pretrained(model_dir)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model.to(device)
    with torch.no_grad():
        out = model(input_ids=torch.tensor(ids, device=device), attention_mask=torch.tensor(mask, device=device),
                    token_type_ids=torch.zeros(ids.shape, dtype=torch.int64, device=device))
    return out.last_hidden_state.cpu().numpy(), out.pooler_output.cpu().numpy(), str(device)


def ours(model_dir, ids, mask):
    """Our encoder's outputs under each of PRECISIONS: name -> (sequence_output, pooled_output)."""
    import jax
    import keras

    from official_bert.checkpoints import load_encoder

    if keras.backend.backend() != "jax":
        sys.exit(f"KERAS_BACKEND=jax is needed (Keras runs on {keras.backend.backend()})")
    encoder, _ = load_encoder(model_dir)
    inputs = {"input_word_ids": ids, "input_mask": mask, "input_type_ids": np.zeros_like(ids)}
    call = jax.jit(lambda trainable, non_trainable, inputs: encoder.stateless_call(trainable, non_trainable,
                                                                                     inputs)[0])
    trainable, non_trainable = ([v.value for v in variables] for variables in (encoder.trainable_variables,
                                                                                encoder.non_trainable_variables))
    outputs = {}
    for name, precision in PRECISIONS.items():
        with jax.default_matmul_precision(precision) if precision else contextlib.nullcontext():
            out = call(trainable, non_trainable, inputs)  # (a trace each: the precision is part of jit's key)
        outputs[name] = (np.asarray(out["sequence_output"]), np.asarray(out["pooled_output"]))
    return outputs, str(jax.devices()[0])


def compare(args):
    """The largest |difference| from transformers of each of our runs, and where each side ran."""
    shape = dict(SMALL if args.small else BASE, vocab_size=30522, max_position_embeddings=512)
    ids, mask = batch(args.batch_size, args.seq_length, shape["vocab_size"])
    with tempfile.TemporaryDirectory() as model_dir:
        sequence, pooled, torch_device = reference(model_dir, shape, ids, mask)
        runs, jax_device = ours(model_dir, ids, mask)
    real = mask.astype(bool)
    result = {"shape": shape, "batch": list(ids.shape), "torch_device": torch_device, "jax_device": jax_device}
    for name, (our_sequence, our_pooled) in runs.items():
        result[name] = {"sequence_output": float(np.abs(our_sequence - sequence)[real].max()),
                        "pooled_output": float(np.abs(our_pooled - pooled).max())}
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", action="store_true", help="a 2-layer, hidden-64 BERT instead of BERT-Base")
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--out", default=None, help="JSON file (default $OUT/gpu_float32_parity.json if OUT is set)")
    args = parser.parse_args(argv)
    result = compare(args)
    print(f"ours on {result['jax_device']}, transformers on {result['torch_device']}; largest |difference|:")
    for name in PRECISIONS:
        print(f"  {name:12s} sequence_output {result[name]['sequence_output']:.2e}   "
              f"pooled_output {result[name]['pooled_output']:.2e}")
    out = args.out or (os.path.join(os.environ["OUT"], "gpu_float32_parity.json") if os.environ.get("OUT") else None)
    if out:
        with open(out, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
    return result


if __name__ == "__main__":
    main()
