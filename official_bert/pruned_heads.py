"""What `BertConfig.pruned_heads` may hold (transformers' `PretrainedConfig.pruned_heads`): layer index -> sorted
list of the removed heads' original indices, each layer keeping at least one head."""


def normalise_pruned_heads(pruned_heads, source):
    """`pruned_heads` with int layer keys (JSON's are strings) and sorted head lists; None reads as {}. Anything
    malformed is left for `check_pruned_heads` to name.

    Args:
        pruned_heads: the field's value as read (a dict, None, or anything a config file holds).
        source: where it came from, for error messages.
    """
    if pruned_heads is None:
        return {}
    if not isinstance(pruned_heads, dict):
        return pruned_heads
    normalised = {}
    for layer, heads in pruned_heads.items():
        try:
            key = int(layer) if isinstance(layer, str) else layer
        except ValueError:
            raise ValueError(f"{source}: field 'pruned_heads' has key {layer!r}; expected a layer index") from None
        if key in normalised:
            raise ValueError(f"{source}: field 'pruned_heads' names layer {key} twice")
        if isinstance(heads, (list, tuple)) and all(isinstance(h, int) and not isinstance(h, bool) for h in heads):
            heads = sorted(heads)
        if isinstance(heads, (list, tuple)) and not heads:
            continue  # a layer with nothing removed
        normalised[key] = heads
    return normalised


def check_pruned_heads(config, source):
    """Raises ValueError naming `source` when `config.pruned_heads` is not a valid head pruning of `config`.

    Args:
        config: a `BertConfig` (its `pruned_heads` already normalised).
        source: where the config came from, for error messages.
    """
    if not isinstance(config.pruned_heads, dict):
        raise ValueError(f"{source}: field 'pruned_heads' must be a dict of layer -> head indices, got "
                         f"{config.pruned_heads!r}")
    if config.pruned_heads and config.family.shared_layers:
        raise ValueError(f"{source}: field 'pruned_heads' is {config.pruned_heads!r}; an albert encoder's layers "
                         "share blocks, so its heads cannot be pruned per layer")
    for layer, heads in config.pruned_heads.items():
        if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < config.num_hidden_layers:
            raise ValueError(f"{source}: field 'pruned_heads' names layer {layer!r}; the model has layers "
                             f"0..{config.num_hidden_layers - 1}")
        if not isinstance(heads, (list, tuple)) or any(
                isinstance(h, bool) or not isinstance(h, int) or not 0 <= h < config.num_attention_heads
                for h in heads):
            raise ValueError(f"{source}: field 'pruned_heads' of layer {layer} is {heads!r}; expected head "
                             f"indices in 0..{config.num_attention_heads - 1}")
        if len(set(heads)) != len(heads):
            raise ValueError(f"{source}: field 'pruned_heads' of layer {layer} names a head twice: {heads!r}")
        if len(heads) >= config.num_attention_heads:
            raise ValueError(f"{source}: field 'pruned_heads' removes every head of layer {layer}; keep at "
                             "least one")
