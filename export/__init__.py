"""Export for serving: raw-text SavedModels for TF Serving (`python -m export.saved_model`), TFLite models for
LiteRT (`python -m export.tflite`), and a one-example client (`python -m export.predict`).

preprocessing.py (in-graph text -> packed inputs), serving_module.py (the three signatures),
classifier_module.py / tagger_module.py / encoder_module.py (one task's answers each), warmup.py (TF Serving
warm-up requests), ops.py (the serving-safe op allow-list and the op listing).
"""
