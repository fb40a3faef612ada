"""Export for serving: raw-text SavedModels for TF Serving (`python -m export.saved_model`), TFLite models for
LiteRT (`python -m export.tflite`), and a one-example client (`python -m export.predict`).

saved_model.py (a model_dir or checkpoint -> the SavedModel), serving_module.py (the three signatures every
export has), classifier_module.py / tagger_module.py / squad_module.py / mlm_module.py / encoder_module.py (one
kind of model's answers each), preprocessing.py (`tf.Example` parsing and the token inputs' specs; raw text ->
inputs is `official_bert.text.Preprocessor`, as in training), warmup.py (TF Serving warm-up requests),
ops.py (the serving-safe op allow-list and the op listing), quantization.py (int8 weights), tflite.py
(conversion), predict.py (the client).
"""
