"""Compression for deployment: knowledge distillation into a smaller student (losses, student initialisation, the
`Distiller` training model) and pruning (layers by importance, weights by magnitude)."""
