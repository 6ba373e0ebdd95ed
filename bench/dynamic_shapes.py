"""Benchmark (issues 15, 40): a model with a symbolic batch, its dynamic kernels against static
specialisations tuned for some batch sizes, next to onnxruntime.

    python bench/dynamic_shapes.py [--models mlp,cnn] [--tuned 1,64] [--batches 1,17,64]
                                   [--trials 32] [--threads 1]
    python bench/dynamic_shapes.py --untuned [--models mlp,cnn,transformer,bert_layer]

``--range LOW..HIGH`` (issue 40, item 2): one dynamic build tuned over batches LOW..HIGH
(``tune_module(..., input_ranges=...)``, ``--trials``, ``--range-samples`` sizes timed per
candidate) against, at each batch of ``--batches``, the static build of that batch tuned
with the same ``--trials``, the untuned dynamic build and onnxruntime; it says which batches
the range tuning measured (the others were never measured while tuning).

    python bench/dynamic_shapes.py --range 1..64 --models mlp,bert_layer --batches 1,3,8,17,37,64

``--bert 1x128,4x37`` (issue 40, item 4): a BERT encoder with a dynamic batch *and*
sequence (``mlcir.testing.whole_models.bert_base(dynamic=True)``: reshape targets from
``Shape``/``Gather``/``Concat``, as exporters write dynamic axes; ``--bert-size small``: 2
layers, hidden 256, 4 heads; ``base``: 12 layers, hidden 768), untuned: one dynamic build
against the static build of each size (the same file with ``shape_dict``) and onnxruntime on
the dynamic file.

    python bench/dynamic_shapes.py --bert 1x128,4x37 --bert-size small --threads 1,2

``--untuned``: the dynamic build against the static build of each size (both with default
schedules), the dynamic build with ``schedule="none"`` (how dynamic kernels ran before they got
default schedules) and onnxruntime on the dynamic file, no tuning.

Per model (``batch="N"`` from mlcir.testing.onnx_models, fixed seeds): one dynamic build
(``mlcir.build``: every kernel has dynamic extents and keeps its default lowering), one build
with the records of ``tune_module(..., input_shapes=[{x: [b, ...]} for b in --tuned])`` (the
same dynamic kernels, plus a static specialisation per tuned batch, to which calls of that
batch dispatch). For each batch of ``--batches`` (tuned or not): ``ex.main(x)`` of both
builds and ``session.run`` of onnxruntime, timed in turns in this process (median of rounds),
and which function the tuned build dispatched to. Every output is checked against
onnxruntime first. Run it alone: other processes distort the timings.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

for _name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # before numpy loads (MLIR notes)
    os.environ.pop(_name, None)

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import mlcir
from mlcir.frontend import from_onnx
from mlcir.testing import onnx_models as models, timing
from mlcir.tune.kernel_sizes import input_symbols, sample_sizes

MODELS = {
    "mlp": (models.mlp, models.mlp_inputs),
    "cnn": (models.mnist_cnn, models.mnist_cnn_inputs),
}
# --untuned only: models whose builders take more than the batch.
UNTUNED_MODELS = {
    **MODELS,
    "transformer": (models.transformer_encoder, models.transformer_encoder_inputs),
    "bert_layer": (lambda batch: models.bert_encoder_layer(batch=batch, seq=128, width=256),
                   lambda batch: models.bert_encoder_layer_inputs(batch=batch, seq=128,
                                                                  width=256)),
}


def _checked(model, inputs: dict, builds) -> list:
    """The inputs as positional arguments, once every build's outputs match onnxruntime's."""
    expected = list(models.reference(model, inputs).values())
    args = list(inputs.values())
    for ex in builds:
        got = ex["main"](*args)
        for g, e in zip(got if isinstance(got, (list, tuple)) else [got], expected):
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4)
    return args


def untuned(name: str, batches: list[int], threads: int) -> list[dict]:
    """The dynamic build against each size's static build (default schedules both) and
    onnxruntime on the dynamic file, every output checked against onnxruntime first."""
    make_model, make_inputs = UNTUNED_MODELS[name]
    model = make_model(batch="N")
    target = f"llvm -threads={threads}"
    dynamic = mlcir.build(from_onnx(model), target=target)
    # What dynamic kernels ran as before they got default schedules (issue 40).
    unscheduled = mlcir.build(from_onnx(model), target=target, schedule="none")
    session = timing.onnxruntime_session(model, threads)
    rows = []
    for batch in batches:
        inputs = make_inputs(batch=batch)
        static = mlcir.build(from_onnx(make_model(batch=batch)), target=target)
        args = _checked(model, inputs, (dynamic, static))
        ort_run, _ = timing.onnxruntime_calls(session, inputs)
        seconds = timing.interleaved({
            "ort": ort_run, "dynamic": lambda args=args: dynamic["main"](*args),
            "static": lambda args=args, static=static: static["main"](*args),
            "unscheduled": lambda args=args: unscheduled["main"](*args)}, threads=threads)
        rows.append({"model": name, "batch": batch, "threads": threads,
                     **{f"{key}_us": value * 1e6 for key, value in seconds.items()}})
    return rows


def untuned_row(r: dict) -> str:
    return (f"{r['model']:<12} {r['batch']:>5} {r['threads']:>3} | {r['ort_us']:>9.1f} "
            f"{r['static_us']:>9.1f} {r['unscheduled_us']:>11.1f} {r['dynamic_us']:>9.1f} "
            f"{r['dynamic_us'] / r['static_us']:>10.2f}x {r['ort_us'] / r['dynamic_us']:>9.2f}x")


UNTUNED_HEADER = (f"{'model':<12} {'batch':>5} {'thr':>3} | {'ort run':>9} {'static':>9} "
                  f"{'unscheduled':>11} {'dynamic':>9} {'dyn/static':>11} {'ort/dyn':>10}")


def _dynamic(builders, threads: int):
    """A model of ``builders`` (model and inputs makers) with a symbolic batch, its input
    maker, the target, the imported module, its untuned build and its first input's name."""
    make_model, make_inputs = builders
    model = make_model(batch="N")
    target = f"llvm -threads={threads}"
    module = from_onnx(model)
    dynamic = mlcir.build(module, target=target)
    return model, make_inputs, target, module, dynamic, dynamic["main"].signature.args[0].name


def bench(name: str, tuned_batches: list[int], batches: list[int], trials: int,
          threads: int) -> list[dict]:
    model, make_inputs, target, module, dynamic, input_name = _dynamic(MODELS[name], threads)
    sizes = [{input_name: list(make_inputs(batch=b)[input_name].shape)} for b in tuned_batches]
    tuned, tune_s = _tuned(module, target, trials, input_shapes=sizes)
    session = timing.onnxruntime_session(model, threads)
    rows = []
    for batch in batches:
        inputs = make_inputs(batch=batch)
        (expected,) = models.reference(model, inputs).values()
        x = inputs[input_name]
        for ex in (dynamic, tuned):
            np.testing.assert_allclose(ex["main"](x), expected, rtol=1e-4, atol=1e-5)
        ort_run, _ = timing.onnxruntime_calls(session, inputs)
        seconds = timing.interleaved({
            "ort": ort_run, "dynamic": lambda x=x: dynamic["main"](x),
            "tuned": lambda x=x: tuned["main"](x)}, threads=threads)
        rows.append({"model": name, "batch": batch, "threads": threads, "tune_s": tune_s,
                     "ran": tuned["main"].dispatch(x).signature.name,
                     **{f"{key}_us": value * 1e6 for key, value in seconds.items()}})
    return rows


def _tuned(module, target: str, trials: int, **kwargs):
    """``module`` built with the records of ``trials`` trials of tuning (and the seconds it took)."""
    work = tempfile.mkdtemp(prefix="mlcir-bench-dyn-")
    try:
        start = time.perf_counter()
        db = mlcir.tune.tune_module(module, target=target, work_dir=work,
                                    max_trials_global=trials, num_trials_per_iter=8, verbose=0,
                                    **kwargs)
        seconds = time.perf_counter() - start
        return mlcir.build(module, target=target, records=db), seconds
    finally:
        shutil.rmtree(work, ignore_errors=True)


def ranged(name: str, low: int, high: int, batches: list[int], trials: int, samples: int,
           threads: int) -> list[dict]:
    """The build tuned over batches low..high against each batch's statically tuned build."""
    make_model = UNTUNED_MODELS[name][0]
    model, make_inputs, target, module, dynamic, input_name = _dynamic(UNTUNED_MODELS[name],
                                                                       threads)
    rank = len(dynamic["main"].signature.args[0].shape)
    ranges = {name_: [(low, high)] + list(array.shape[1:])
              for name_, array in make_inputs(batch=1).items()}
    assert len(ranges[input_name]) == rank
    # The sizes tune_module(input_ranges=ranges, range_samples=samples) would draw, given
    # explicitly to know which batches were measured.
    with module.context:
        main = next(op for op in module.body.operations if op.operation.name == "func.func"
                    and str(op.attributes["sym_name"]) == '"main"')
        sizes = sample_sizes(input_symbols(main), ranges, samples, seed=0)
    measured = {size[input_name][0] for size in sizes}
    tuned, tune_s = _tuned(module, target, trials,
                           range_sizes=[(size, 1.0) for size in sizes])
    session = timing.onnxruntime_session(model, threads)
    rows = []
    for batch in batches:
        inputs = make_inputs(batch=batch)
        static, static_s = _tuned(from_onnx(make_model(batch=batch)), target, trials)
        args = _checked(model, inputs, (dynamic, tuned, static))
        ort_run, _ = timing.onnxruntime_calls(session, inputs)
        seconds = timing.interleaved({
            "ort": ort_run, "dynamic": lambda args=args: dynamic["main"](*args),
            "ranged": lambda args=args: tuned["main"](*args),
            "static": lambda args=args, static=static: static["main"](*args)}, threads=threads)
        rows.append({"model": name, "batch": batch, "threads": threads, "tune_s": tune_s,
                     "static_tune_s": static_s, "measured": batch in measured,
                     **{f"{key}_us": value * 1e6 for key, value in seconds.items()}})
    return rows


BERT_SIZES = {"small": dict(layers=2, hidden=256, heads=4, intermediate=1024),
              "base": dict(layers=12, hidden=768, heads=12, intermediate=3072)}


def bert(sizes: list[tuple[int, int]], size: str, threads: int) -> list[dict]:
    """The dynamic BERT's one build against each size's static build and onnxruntime."""
    from mlcir.testing import whole_models

    model = whole_models.bert_base(dynamic=True, **BERT_SIZES[size])
    target = f"llvm -threads={threads}"
    dynamic = mlcir.build(from_onnx(model), target=target)
    session = timing.onnxruntime_session(model, threads)
    rows = []
    for batch, seq in sizes:
        inputs = whole_models.model_inputs(model, dims={"batch": batch, "sequence": seq})
        static = mlcir.build(from_onnx(model, shape_dict={n: list(a.shape)
                                                          for n, a in inputs.items()}),
                             target=target)
        (expected,) = models.reference(model, inputs).values()
        for ex in (dynamic, static):
            np.testing.assert_allclose(ex.main(**inputs), expected, rtol=1e-3, atol=1e-3)
        ort_run, _ = timing.onnxruntime_calls(session, inputs)
        seconds = timing.interleaved({
            "ort": ort_run, "dynamic": lambda inputs=inputs: dynamic.main(**inputs),
            "static": lambda inputs=inputs, static=static: static.main(**inputs)},
            threads=threads)
        rows.append({"model": f"bert-{size}", "batch": f"{batch}x{seq}", "threads": threads,
                     **{f"{key}_us": value * 1e6 for key, value in seconds.items()}})
    return rows


BERT_HEADER = (f"{'model':<10} {'size':>7} {'thr':>3} | {'ort run':>9} {'static':>9} "
               f"{'dynamic':>9} {'dyn/static':>10} {'ort/dyn':>8}")


def bert_row(r: dict) -> str:
    return (f"{r['model']:<10} {r['batch']:>7} {r['threads']:>3} | {r['ort_us']:>9.1f} "
            f"{r['static_us']:>9.1f} {r['dynamic_us']:>9.1f} "
            f"{r['dynamic_us'] / r['static_us']:>9.2f}x {r['ort_us'] / r['dynamic_us']:>7.2f}x")


RANGED_HEADER = (f"{'model':<10} {'batch':>5} {'thr':>3} {'timed?':>6} | {'ort run':>9} "
                 f"{'dynamic':>9} {'ranged':>9} {'static':>9} {'rng/static':>10} "
                 f"{'ort/rng':>8}")


def ranged_row(r: dict) -> str:
    return (f"{r['model']:<10} {r['batch']:>5} {r['threads']:>3} "
            f"{'yes' if r['measured'] else 'no':>6} | {r['ort_us']:>9.1f} "
            f"{r['dynamic_us']:>9.1f} {r['ranged_us']:>9.1f} {r['static_us']:>9.1f} "
            f"{r['ranged_us'] / r['static_us']:>9.2f}x {r['ort_us'] / r['ranged_us']:>7.2f}x")


HEADER = (f"{'model':<6} {'batch':>5} {'thr':>3} {'tune s':>7} {'tuned build ran':<22} | "
          f"{'ort run':>9} {'dynamic':>9} {'tuned':>9} {'dyn/tuned':>9} {'ort/tuned':>9}")
FOOTER = ("us per ex.main(x) / session.run call, as a user calls them. 'dynamic': the build "
          "with only dynamic kernels; 'tuned': the build with the tuned specialisations, which "
          "runs its dynamic kernels for a batch it has none for. dyn/tuned above 1: the "
          "specialisation is faster.")


def row(r: dict) -> str:
    return (f"{r['model']:<6} {r['batch']:>5} {r['threads']:>3} {r['tune_s']:>7.1f} "
            f"{r['ran']:<22} | {r['ort_us']:>9.1f} {r['dynamic_us']:>9.1f} "
            f"{r['tuned_us']:>9.1f} {r['dynamic_us'] / r['tuned_us']:>8.2f}x "
            f"{r['ort_us'] / r['tuned_us']:>8.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--tuned", default="1,64", help="batch sizes to specialise and tune")
    parser.add_argument("--batches", default="1,17,64", help="batch sizes to time")
    parser.add_argument("--trials", type=int, default=32, help="tuning trials per model")
    parser.add_argument("--threads", default="1")
    parser.add_argument("--untuned", action="store_true",
                        help="dynamic against static builds, no tuning")
    parser.add_argument("--range", help="LOW..HIGH: tune one dynamic build over these batches")
    parser.add_argument("--range-samples", type=int, default=4,
                        help="sizes each candidate is timed at when tuning over a range")
    parser.add_argument("--bert", help="BxS,...: the dynamic BERT at these sizes, untuned")
    parser.add_argument("--bert-size", choices=sorted(BERT_SIZES), default="small")
    args = parser.parse_args()
    if args.bert:
        sizes = [tuple(int(v) for v in item.split("x")) for item in args.bert.split(",")]
        print(BERT_HEADER)
        for threads in (int(t) for t in args.threads.split(",")):
            for r in bert(sizes, args.bert_size, threads):  # type: ignore[arg-type]
                print(bert_row(r), flush=True)
        print("us per ex.main(**inputs) / session.run call; dyn/static at most 1.2x and ort/dyn "
              "at least 1.0x are issue 40's targets.")
        return
    if args.range:
        low, high = (int(v) for v in args.range.split(".."))
        print(RANGED_HEADER)
        for name in args.models.split(","):
            for threads in (int(t) for t in args.threads.split(",")):
                rows = ranged(name, low, high, [int(b) for b in args.batches.split(",")],
                              args.trials, args.range_samples, threads)
                for r in rows:
                    print(ranged_row(r), flush=True)
                print(f"tuning: {rows[0]['tune_s']:.0f} s over the range, "
                      f"{sum(r['static_tune_s'] for r in rows):.0f} s for the static builds")
        print("us per call as called; 'ranged': the one dynamic build tuned over the range, "
              "'static': each batch's static build tuned with the same trials; rng/static "
              "at most 1.1x is issue 40's target; timed?: whether tuning measured that batch.")
        return
    if args.untuned:
        print(UNTUNED_HEADER)
        for name in args.models.split(","):
            for threads in (int(t) for t in args.threads.split(",")):
                for r in untuned(name, [int(b) for b in args.batches.split(",")], threads):
                    print(untuned_row(r), flush=True)
        print("us per ex.main(...) / session.run call; dyn/static below 1.2x is issue 40's "
              "target, ort/dyn above 1.0x.")
        return
    tuned = [int(b) for b in args.tuned.split(",")]
    batches = [int(b) for b in args.batches.split(",")]
    print(HEADER)
    for name in args.models.split(","):
        for threads in (int(t) for t in args.threads.split(",")):
            for r in bench(name, tuned, batches, args.trials, threads):
                print(row(r), flush=True)
    print(FOOTER)


if __name__ == "__main__":
    main()
