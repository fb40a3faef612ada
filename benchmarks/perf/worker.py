"""One peer, one precision, in its own process (thread pools and Keras policies stay apart).

    python -m benchmarks.perf.worker --peer=ours --precision=fp32 --suite=inference --shapes=minilm,base
    python -m benchmarks.perf.worker --peer=hf_torch --suite=serving --batch_sizes=32 --latency_texts=200

Prints one `RESULT {json}` line per measured case.
"""

import argparse
import importlib
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

PEERS = {"ours": "benchmarks.perf.ours", "hf_torch": "benchmarks.perf.hf_torch",
         "keras_hub": "benchmarks.perf.keras_hub_peer"}


def _emit(result):
    print("RESULT " + json.dumps(result), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peer", choices=sorted(PEERS), required=True)
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--suite", choices=["inference", "train", "memory", "serving"], required=True)
    parser.add_argument("--shapes", default="minilm,base")
    parser.add_argument("--batch_sizes", default="1,8,32")
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=3, help="memory suite: epochs")
    parser.add_argument("--latency_texts", type=int, default=200, help="serving suite: single-text requests timed")
    parser.add_argument("--jit_compile", choices=["auto", "true", "false"], default="auto")
    parser.add_argument("--lite", choices=["none", "dynamic_int8", "full_int8"], default=None,
                        help="serving suite, ours: the export's TFLite conversion (this quantization) in LiteRT")
    parser.add_argument("--lite_threads", type=int, default=0,
                        help="serving suite, --lite: LiteRT's threads (0: as many as the process has cores)")
    parser.add_argument("--serving_model", default=None,
                        help="serving suite: the fine-tuned model (serving_inputs.fine_tune's directory)")
    args = parser.parse_args()

    peer = importlib.import_module(PEERS[args.peer])
    peer.setup(args.precision)
    jit = None if args.jit_compile == "auto" else args.jit_compile == "true"
    common = {"peer": args.peer, "precision": args.precision, "suite": args.suite, "seq_length": args.seq_length}
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    if args.suite == "serving":  # one real checkpoint (all-MiniLM-L6-v2), so no --shapes
        if not args.serving_model:
            parser.error("--suite=serving needs --serving_model (benchmarks.run fine-tunes it)")
        compiled = {"jit_compile": bool(jit)} if args.peer == "ours" else {}  # ours: the --jit_compile export
        if args.peer == "ours" and args.lite:
            compiled.update(lite=args.lite, lite_threads=args.lite_threads)
        for batch_size in batch_sizes:
            _emit({**common, "shape": "minilm", **compiled,
                   **peer.serving(args.latency_texts, batch_size, args.repeats, args.serving_model, **compiled)})
        return
    for shape in args.shapes.split(","):
        if args.suite == "inference":
            for result in peer.inference(shape, batch_sizes, args.seq_length, args.repeats, jit):
                _emit({**common, "shape": shape, **result})
        elif args.suite == "train":
            for batch_size in batch_sizes:
                _emit({**common, "shape": shape, **peer.train(shape, batch_size, args.seq_length, args.repeats, jit)})
        else:
            for batch_size in batch_sizes:
                _emit({**common, "shape": shape, **peer.train_memory(shape, batch_size, args.seq_length, args.epochs,
                                                                     args.repeats, jit)})


if __name__ == "__main__":
    main()
