"""A smaller student from a teacher: its config, which teacher layer teaches which student layer, and the copy of
the teacher's embeddings, chosen layers (or the kept heads of them), pooler and head into the student (DistilBERT's
initialisation; head pruning's copy)."""

import dataclasses

import numpy as np


def parse_layers(text, num_teacher_layers):
    """Teacher layer indices from "0,2,4".

    Raises:
        ValueError: an index that is not an integer in [0, num_teacher_layers), a repeated index, indices out of
            the teacher's order, or none at all; the message names `--student_layers`.
    """
    try:
        layers = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"--student_layers={text!r}: expected comma-separated teacher layer indices, "
                         "e.g. 0,2,4") from None
    if not layers:
        raise ValueError("--student_layers is empty: name the teacher layers the student keeps, e.g. 0,2,4")
    bad = [i for i in layers if not 0 <= i < num_teacher_layers]
    if bad:
        raise ValueError(f"--student_layers={text}: {bad} out of range; the teacher has layers "
                         f"0..{num_teacher_layers - 1}")
    if len(set(layers)) != len(layers):
        raise ValueError(f"--student_layers={text}: a layer is named twice")
    if layers != sorted(layers):
        in_order = ",".join(map(str, sorted(layers)))
        raise ValueError(f"--student_layers={text}: name the layers in the teacher's order ({in_order}); a "
                         "student's layers run in the order given")
    return layers


def student_config(teacher_config, layers):
    """The teacher's `BertConfig` with `len(layers)` hidden layers (a head-pruned teacher's `pruned_heads` follow
    their layers: student layer i has the heads teacher layer `layers[i]` has).

    Raises:
        ValueError: an ALBERT teacher whose `num_hidden_groups` does not divide `len(layers)`.
    """
    if teacher_config.family.shared_layers and len(layers) % teacher_config.num_hidden_groups:
        raise ValueError(f"--student_layers names {len(layers)} layers; the ALBERT teacher's layers share "
                         f"{teacher_config.num_hidden_groups} weight groups, which must divide the student's depth")
    pruned_heads = {i: list(teacher_config.pruned_heads[j]) for i, j in enumerate(layers)
                    if j in teacher_config.pruned_heads}
    return dataclasses.replace(teacher_config, num_hidden_layers=len(layers), pruned_heads=pruned_heads)


def uniform_layer_map(num_student_layers, num_teacher_layers):
    """The teacher layer each student layer imitates when the student is not cut from the teacher: student
    layer i <- teacher layer (i + 1) * L_t / L_s - 1 (TinyBERT's uniform mapping; the last layers match)."""
    return [(i + 1) * num_teacher_layers // num_student_layers - 1 for i in range(num_student_layers)]


def copy_teacher_weights(student, teacher, layers):
    """Copies the teacher's embeddings, the transformer layers `layers` (in order), the pooler and every head
    layer into the student, a task model of the same kind and width with `len(layers)` layers.

    An ALBERT student gets the teacher's embedding projection and every shared block (its layers run the same
    weights, fewer times): `layers` then sets only the depth.

    A head-pruned student (its config's `pruned_heads`) gets, in each layer, the query/key/value and output-projection
    slices of the heads it keeps (which the teacher layer must have); every other weight is copied whole.

    Args:
        student: a task model (`BertClassifier`, `BertTokenClassifier`, `BertSpanLabeler`, ...) with `.encoder`.
        teacher: the trained task model of the same kind.
        layers: teacher layer indices; student layer i gets teacher layer `layers[i]`.

    Raises:
        ValueError: the student's depth is not `len(layers)`, a layer's weights differ in shape (named), or a
            student layer keeps a head its teacher layer does not have.
    """
    s_enc, t_enc = student.encoder, teacher.encoder
    if s_enc.config.num_hidden_layers != len(layers):
        raise ValueError(f"the student has {s_enc.config.num_hidden_layers} layers, but {len(layers)} teacher layers "
                         f"are named ({layers})")
    pairs = [(s_enc.embeddings, t_enc.embeddings)]
    if t_enc.config.family.shared_layers:  # ALBERT's shared blocks, group by group
        pairs += [(s_enc.embedding_projection, t_enc.embedding_projection)]
        pairs += list(zip(s_enc.transformer_layers, t_enc.transformer_layers))
    else:
        for i, j in enumerate(layers):
            _copy_block(s_enc.transformer_layers[i], t_enc.transformer_layers[j], s_enc.config.kept_heads(i),
                        t_enc.config.kept_heads(j))
    if s_enc.pooler is not None and t_enc.pooler is not None:
        pairs.append((s_enc.pooler, t_enc.pooler))
    teacher_head = {layer.name: layer for layer in teacher.layers if layer is not t_enc}
    pairs += [(layer, teacher_head[layer.name]) for layer in student.layers
              if layer is not s_enc and layer.weights and layer.name in teacher_head]
    for target, source in pairs:
        _copy(target, source)


def _copy_block(target, source, target_heads, source_heads):
    """Copies transformer block `source` into `target`; `target_heads` / `source_heads`: the original indices of the
    heads each keeps (the order of their kernels' head axis)."""
    if target_heads == source_heads:
        _copy(target, source)
        return
    missing = sorted(set(target_heads) - set(source_heads))
    if missing:
        raise ValueError(f"student layer {target.name} keeps heads {missing}, which teacher layer {source.name} does "
                         f"not have (it keeps {source_heads})")
    index = [source_heads.index(h) for h in target_heads]
    t_att, s_att = target.attention, source.attention
    for name in ("query", "key", "value"):  # kernel (hidden, heads, head_size), bias (heads, head_size)
        t, s = getattr(t_att, name), getattr(s_att, name)
        t.kernel.assign(np.take(s.kernel.numpy(), index, axis=1))
        t.bias.assign(np.take(s.bias.numpy(), index, axis=0))
    t_att.output_dense.kernel.assign(np.take(s_att.output_dense.kernel.numpy(), index, axis=0))  # (heads, hs, hidden)
    t_att.output_dense.bias.assign(s_att.output_dense.bias)
    for name in ("attention_layer_norm", "intermediate", "output_dense", "output_layer_norm"):
        _copy(getattr(target, name), getattr(source, name))


def _copy(target, source):
    shapes = [tuple(v.shape) for v in target.weights], [tuple(v.shape) for v in source.weights]
    if shapes[0] != shapes[1]:
        raise ValueError(f"student layer {target.name} {shapes[0]} does not match teacher layer {source.name} "
                         f"{shapes[1]}")
    for t, s in zip(target.weights, source.weights):
        t.assign(s)
