"""TF Serving warm-up requests: `assets.extra/tf_serving_warmup_requests`, a TFRecord of `PredictionLog`s.

TF Serving replays these requests when it loads a version, before it reports the version available, so
the first real request does not pay for graph initialisation. One request per signature, with real
texts (and their tf.Example and token forms).
"""

import numpy as np
import tensorflow as tf

WARMUP_FILE = "tf_serving_warmup_requests"

# Real sentences: CoNLL-2003 and SST-2 style text, one short and one with several entities.
SAMPLE_TEXTS = ("Peter Blackburn flew to Brussels on Monday to meet the European Commission.",
                "It's a charming and often affecting journey.")
SAMPLE_SECOND_TEXTS = ("Blackburn travelled to Brussels for talks with the EU.",
                       "The journey is charming and moving.")


def warmup_requests(module):
    """The requests of a module that takes one string per text feature, from its `warmup_texts()`: a batch of them
    on `serving_default`, the same as tf.Examples on `serve_examples`, and packed on `serve_tokens`.

    Args:
        module: an `export.serving_module.ServingModule` (its `warmup_requests()` calls this; multiple choice,
            whose inputs differ, builds its own).

    Returns:
        list of `(signature_name, {input name: np.ndarray})`.
    """
    texts = {name: np.array(values, dtype=object) for name, values in module.warmup_texts().items()}
    examples = []
    for row in range(len(texts[module.text_features[0]])):
        feature = {name: tf.train.Feature(bytes_list=tf.train.BytesList(value=[values[row].encode("utf-8")]))
                   for name, values in texts.items()}
        examples.append(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    inputs, _ = module.preprocessor.pack([tf.constant(texts[name].astype(str)) for name in module.text_features])
    return [("serving_default", texts),
            ("serve_examples", {"examples": np.array(examples, dtype=object)}),
            ("serve_tokens", {name: value.numpy() for name, value in inputs.items()})]


def write_warmup_file(path, requests):
    """Writes `PredictionLog` records (each a `PredictLog` with the request) to a TFRecord file.

    Args:
        path: the file, normally `<version>/assets.extra/tf_serving_warmup_requests`.
        requests: list of `(signature_name, {input name: np.ndarray})`.
    """
    from tensorflow_serving.apis import predict_pb2, prediction_log_pb2

    with tf.io.TFRecordWriter(str(path)) as writer:
        for signature_name, inputs in requests:
            request = predict_pb2.PredictRequest()
            request.model_spec.signature_name = signature_name
            for name, value in inputs.items():
                request.inputs[name].CopyFrom(tf.make_tensor_proto(value))
            log = prediction_log_pb2.PredictionLog(predict_log=prediction_log_pb2.PredictLog(request=request))
            writer.write(log.SerializeToString())


def read_warmup_file(path):
    """Reads a warm-up file back: list of `(signature_name, {input name: np.ndarray})`."""
    from tensorflow_serving.apis import prediction_log_pb2

    requests = []
    for record in tf.data.TFRecordDataset(str(path)).as_numpy_iterator():
        log = prediction_log_pb2.PredictionLog.FromString(record)
        if not log.HasField("predict_log"):
            raise ValueError(f"{path}: a record is not a predict_log PredictionLog")
        request = log.predict_log.request
        requests.append((request.model_spec.signature_name,
                         {name: tf.make_ndarray(proto) for name, proto in request.inputs.items()}))
    return requests
