"""The peer's training loop for the fine-tuning benchmarks: plain PyTorch with the recipe ours uses."""

import math
import os
import time


def train_pytorch(model, features, labels, num_examples, epochs, learning_rate, seed, bfloat16=False,
                  batch_size=32, log_every=20, trim_padding=False, state_path=None, checkpoint_every=50):
    """Fine-tunes a transformers model in place: AdamW (weight decay 0.01 except biases and LayerNorm,
    epsilon 1e-8), 10% linear warmup then linear decay, global-norm clipping at 1.0, a fresh seeded order
    every epoch.

    Args:
        model: a transformers `BertFor...` model.
        features: dict of (num_examples, seq) tensors `input_ids`, `attention_mask`, `token_type_ids`.
        labels: (num_examples, ...) tensor of labels, passed as `labels=`; or a dict of such tensors, passed as
            keyword arguments of those names (e.g. `start_positions` / `end_positions` for question answering).
        num_examples, epochs, learning_rate, seed: the recipe.
        bfloat16: autocast the forward pass to bfloat16.
        trim_padding: cut each batch (and (num_examples, seq) labels) to its longest sequence, as the padding
            to the longest of `transformers`' data collators (`run_ner.py`'s default) does.
        state_path: if given, the whole training state (weights, optimizer, schedule, batch order, step) is saved
            there every `checkpoint_every` steps, and a run that finds it resumes from it, as ours does.
    Returns: `(wall seconds, steady examples/second)`: seconds summed over resumed runs; the rate is this run's,
        its first step left out.
    """
    import torch
    import transformers

    steps_per_epoch = num_examples // batch_size
    total_steps = math.ceil(num_examples * epochs / batch_size)
    no_decay = [p for n, p in model.named_parameters() if n.endswith("bias") or "LayerNorm" in n]
    decay = [p for n, p in model.named_parameters() if not (n.endswith("bias") or "LayerNorm" in n)]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                                  lr=learning_rate, eps=1e-8)
    scheduler = transformers.get_linear_schedule_with_warmup(optimizer, int(0.1 * total_steps), total_steps)

    def targets(batch, length):
        if isinstance(labels, dict):
            return {name: values[batch] for name, values in labels.items()}
        return {"labels": labels[batch][:, :length].contiguous() if labels.dim() == 2 else labels[batch]}

    model.train()
    generator = torch.Generator().manual_seed(seed)
    order, step, earlier_seconds = None, 0, 0.0
    if state_path and os.path.exists(state_path):
        state = torch.load(state_path, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        generator.set_state(state["generator"])
        torch.set_rng_state(state["dropout_rng"])
        order, step, earlier_seconds = state["order"], state["step"], state["seconds"]
        print(f"pytorch: resumed from {state_path} at step {step}/{total_steps}", flush=True)
    first_step, start, steady_start = step, time.perf_counter(), None

    def save_state():
        temporary = state_path + ".tmp"
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(), "generator": generator.get_state(),
                    "dropout_rng": torch.get_rng_state(), "order": order,
                    "step": step, "seconds": earlier_seconds + time.perf_counter() - start}, temporary)
        os.replace(temporary, state_path)  # a kill mid-write leaves the previous state whole

    while step < total_steps:
        if step % steps_per_epoch == 0:
            order = torch.randperm(num_examples, generator=generator)
        batch = order[(step % steps_per_epoch) * batch_size:(step % steps_per_epoch + 1) * batch_size]
        length = int(features["attention_mask"][batch].sum(dim=1).max()) if trim_padding else None
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bfloat16):
            out = model(**{name: features[name][batch][:, :length].contiguous()
                           for name in ("input_ids", "attention_mask", "token_type_ids")}, **targets(batch, length))
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        step += 1
        if step == first_step + 1:
            steady_start = time.perf_counter()
        if step % log_every == 0:
            print(f"pytorch step {step}/{total_steps} loss {out.loss.item():.4f}", flush=True)
        if state_path and (step % checkpoint_every == 0 or step == total_steps):
            save_state()
    seconds = earlier_seconds + time.perf_counter() - start
    steady_steps = total_steps - first_step - 1
    rate = steady_steps * batch_size / (time.perf_counter() - steady_start) if steady_steps > 0 else float("nan")
    return seconds, rate
