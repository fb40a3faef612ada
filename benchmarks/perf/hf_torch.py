"""The Hugging Face transformers (PyTorch, CPU) peer of the performance suite."""

import os

from benchmarks.perf.inputs import packed_inputs
from benchmarks.perf.memory import memory_result, rss_mib
from benchmarks.perf.shapes import SHAPES, VOCAB_SIZE
from benchmarks.perf.timing import measure

_PRECISION = {"value": "fp32"}


def setup(precision):
    import torch

    torch.set_num_threads(len(os.sched_getaffinity(0)))
    _PRECISION["value"] = precision


def _config(shape):
    import transformers

    layers, hidden, heads, intermediate = SHAPES[shape]
    return transformers.BertConfig(vocab_size=VOCAB_SIZE, hidden_size=hidden, num_hidden_layers=layers,
                                   num_attention_heads=heads, intermediate_size=intermediate, num_labels=2)


def _feed(batch_size, seq_length):
    import torch

    ids, mask, types, labels = packed_inputs(batch_size, seq_length)
    return ({"input_ids": torch.from_numpy(ids).long(), "attention_mask": torch.from_numpy(mask).long(),
             "token_type_ids": torch.from_numpy(types).long()}, torch.from_numpy(labels).long())


def _autocast():
    import torch

    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=_PRECISION["value"] == "bf16")


def inference(shape, batch_sizes, seq_length, repeats, jit_compile=None):
    """`BertModel` (its default attention, SDPA) under `torch.inference_mode`, bf16 by autocast."""
    import torch
    import transformers

    model = transformers.BertModel(_config(shape)).eval()

    for batch_size in batch_sizes:
        inputs, _ = _feed(batch_size, seq_length)

        def forward():
            with torch.inference_mode(), _autocast():
                out = model(**inputs)
                return out.last_hidden_state.float().numpy(), out.pooler_output.float().numpy()

        yield {"batch_size": batch_size, **measure(forward, repeats)}


def _train_step(shape, batch_size, seq_length, losses):
    """`step()` of `BertForSequenceClassification` with torch AdamW, clipping and a linear warmup schedule."""
    import torch
    import transformers

    model = transformers.BertForSequenceClassification(_config(shape)).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5, eps=1e-6, weight_decay=0.01)
    scheduler = transformers.get_linear_schedule_with_warmup(optimizer, 1_000, 10_000)
    inputs, labels = _feed(batch_size, seq_length)

    def step():
        with _autocast():
            loss = model(**inputs, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        losses.append(loss.item())

    return step


def train(shape, batch_size, seq_length, steps, jit_compile=None):
    """Seconds per optimizer step of sequence-pair classification (`_train_step`)."""
    losses = []
    timing = measure(_train_step(shape, batch_size, seq_length, losses), steps)
    return {"batch_size": batch_size, "final_loss": losses[-1] if losses else None, **timing}


def train_memory(shape, batch_size, seq_length, epochs, steps_per_epoch, jit_compile=None):
    """Resident memory (MiB) after each epoch of `steps_per_epoch` training steps, and the peak."""
    step, after_epoch = _train_step(shape, batch_size, seq_length, []), []
    for _ in range(epochs):
        for _ in range(steps_per_epoch):
            step()
        after_epoch.append(rss_mib())
    return memory_result(batch_size, after_epoch)


def serving(latency_texts, batch_size, repeats, model_dir):
    """Raw text -> label through transformers' `pipeline("text-classification")` (its tokenizer, PyTorch model).

    The same fine-tuned model (`model_dir`: `serving_inputs.fine_tune`'s) as ours; texts cut at the same 128 pieces.
    """
    import numpy as np
    import transformers

    from benchmarks.perf import serving_inputs

    texts = serving_inputs.serving_texts()
    model = transformers.BertForSequenceClassification.from_pretrained(model_dir).eval()
    model.config.id2label = dict(enumerate(serving_inputs.LABELS))
    model.config.label2id = {label: i for i, label in enumerate(serving_inputs.LABELS)}
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    classifier = transformers.pipeline("text-classification", model=model, tokenizer=tokenizer, device="cpu")

    def classify(batch):
        with _autocast():
            answers = classifier(list(batch), batch_size=len(batch), truncation=True,
                                 max_length=serving_inputs.MAX_SEQ_LENGTH)
        return np.array([model.config.label2id[a["label"]] for a in answers])

    return serving_inputs.time_classifier(classify, texts, latency_texts, batch_size, repeats)
