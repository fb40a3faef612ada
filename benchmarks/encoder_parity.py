"""Numerical parity of our encoder with Hugging Face transformers on a real checkpoint.

    python -m benchmarks.encoder_parity

Loads ../shared/data/all-MiniLM-L6-v2 (Hugging Face format, and the same weights re-written as a Google
TF1 checkpoint) and prints the largest absolute difference from the outputs transformers computed
(`reference/minilm_reference.npz`: 32 SST-2 sentences, 16 MRPC pairs) for `sequence_output` on real
tokens, `pooled_output` and the mean-pooled sentence embedding.
"""

import json
import os
import tempfile

import numpy as np

from official_bert.checkpoints import encoder_tensors, load_encoder, write_google_checkpoint

SHARED_DATA = os.environ.get("OFFICIAL_BERT_SHARED_DATA",
                             os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data"))


def max_differences(encoder, reference, name):
    mask = reference[f"{name}_padding_mask"].astype(bool)
    outputs = encoder({"input_word_ids": reference[f"{name}_input_ids"],
                       "input_mask": reference[f"{name}_padding_mask"],
                       "input_type_ids": reference[f"{name}_segment_ids"]})
    sequence = outputs["sequence_output"].numpy()
    mean = (sequence * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    embedding = mean / np.linalg.norm(mean, axis=-1, keepdims=True)
    return (np.abs(sequence - reference[f"{name}_sequence_output"])[mask].max(),
            np.abs(outputs["pooled_output"].numpy() - reference[f"{name}_pooled_output"]).max(),
            np.abs(embedding - reference[f"{name}_sentence_embedding"]).max())


def main():
    minilm = os.path.join(SHARED_DATA, "all-MiniLM-L6-v2")
    reference = np.load(os.path.join(SHARED_DATA, "reference", "minilm_reference.npz"))
    encoder, config = load_encoder(minilm)
    google_dir = tempfile.mkdtemp(prefix="minilm_google_")
    with open(os.path.join(minilm, "config.json")) as f:
        hf_config = json.load(f)
    with open(os.path.join(google_dir, "bert_config.json"), "w") as f:
        json.dump({k: v for k, v in hf_config.items() if k in config.to_dict()}, f)
    write_google_checkpoint(encoder_tensors(encoder, "google"), os.path.join(google_dir, "bert_model.ckpt"))
    google_encoder, _ = load_encoder(google_dir)

    print(f"{'checkpoint':12s}{'inputs':>16s}{'sequence_output':>18s}{'pooled_output':>16s}{'embedding':>12s}")
    for label, model in (("huggingface", encoder), ("google tf1", google_encoder)):
        for name, count in (("sst2", "32 SST-2"), ("mrpc", "16 MRPC pairs")):
            seq, pooled, emb = max_differences(model, reference, name)
            print(f"{label:12s}{count:>16s}{seq:18.2e}{pooled:16.2e}{emb:12.2e}")


if __name__ == "__main__":
    main()
