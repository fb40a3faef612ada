"""Task objects: what each fine-tuning task supplies to `official_bert.runner` (see `base.Task`)."""
