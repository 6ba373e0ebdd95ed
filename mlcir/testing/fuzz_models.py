"""Differential fuzzing of the whole compiler: random ONNX models, mlcir against onnxruntime.

    python -m mlcir.testing.fuzz_models --cases 200 --seed 0 --jobs 2 [--out DIR] [--tune 0.05]

Each case is a model of :func:`.model_generator.generate` (its seed is ``seed * 1_000_003 +
case``), built by mlcir with a random thread count (1 or 2) and ``layout`` (packed, direct,
none), run on seeded inputs (a symbolic model at two batch sizes) and compared with
onnxruntime. The outcome is ``ok``; ``refused`` (an ``MlcirError``, which must name the node
and op); ``wrong`` (a result differs past the tolerance); ``crashed`` (any other exception,
or the worker process died); ``hung`` (past the time limit). A fraction of the cases
(``--tune``) is also tuned briefly (8 trials) and the tuned build compared the same way. A
wrong, crashed or hung case is shrunk while it still fails the same way (regenerated with
smaller sizes, outputs dropped, nodes bypassed, dead nodes removed, symbolic dims of the inputs
made smaller) and written to ``--out`` as ``<outcome>-<seed>.onnx`` with its inputs (``.npz``). docs/fuzzing.md gives the tolerances and the refusals by reason.
"""

from __future__ import annotations

import base64
import io
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .workers import (fuzzer_arguments, outcome_counts, refusal_counts, run_in_workers, serve,
                      write_results)

# Tolerance per dtype: |mlcir - onnxruntime| <= ATOL + RTOL * max|onnxruntime| per output.
TOLERANCE = {"float32": (1e-3, 1e-5), "float64": (1e-9, 1e-12)}
LAYOUTS = ("packed", "direct", "none")
TUNE_TRIALS = 8
BAD = ("wrong", "crashed", "hung")
# The caps on drawn sizes a failing seed is regenerated with, smallest first.
SIZE_CAPS = (2, 4, 8, 16)


def case_seed(seed: int, case: int) -> int:
    return seed * 1_000_003 + case


def case_options(seed: int, case: int, tune_fraction: float = 0.0) -> dict[str, Any]:
    """The build options of a case, drawn from its seed."""
    rng = np.random.default_rng(case_seed(seed, case) ^ 0x5EED)
    return {"threads": int(rng.choice([1, 2])), "layout": str(rng.choice(LAYOUTS)),
            "tune": bool(rng.random() < tune_fraction)}


# -- in the worker -----------------------------------------------------------------------------

def compare(ours: np.ndarray, theirs: np.ndarray) -> str | None:
    """Why ``ours`` is not ``theirs`` within the tolerance, or None."""
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    if ours.shape != theirs.shape:
        return f"shape {ours.shape} against {theirs.shape}"
    if ours.dtype != theirs.dtype:
        return f"dtype {ours.dtype} against {theirs.dtype}"
    if theirs.dtype.kind != "f":
        bad = int(np.count_nonzero(ours != theirs))
        return f"{bad} of {theirs.size} elements differ" if bad else None
    if not np.array_equal(np.isnan(ours), np.isnan(theirs)):
        return "NaN in different places"
    finite = ~np.isnan(theirs)
    if not finite.any():
        return None
    rtol, atol = TOLERANCE[str(theirs.dtype)]
    diff = float(np.abs(ours[finite] - theirs[finite]).max())
    scale = float(np.abs(theirs[finite]).max())
    return None if diff <= atol + rtol * scale else \
        f"max difference {diff:.3g} at scale {scale:.3g} (tolerance {atol + rtol * scale:.3g})"


def check_model(model_bytes: bytes, feeds: list[dict[str, np.ndarray]],
                options: dict[str, Any]) -> dict[str, Any]:
    """Build ``model_bytes`` with mlcir as ``options`` say, run every feed, compare."""
    import onnxruntime as ort

    import mlcir
    from mlcir.errors import MlcirError
    from mlcir.frontend import from_onnx

    target = "llvm" if options["threads"] == 1 else f"llvm -threads={options['threads']}"
    session = ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    expected = [session.run(None, f) for f in feeds]
    stage = "import"
    try:
        module = from_onnx(model_bytes)
        stage = "build"
        builds = [("build", mlcir.build(module, target=target, layout=options["layout"]))]
        if options.get("tune"):
            stage = "tune"
            builds.append(("tuned", _tuned(model_bytes, target, options["layout"])))
    except MlcirError as error:
        return {"outcome": "refused", "stage": stage,
                "reason": f"{type(error).__name__}: {error}"[:1000]}
    for label, ex in builds:
        for feed, reference in zip(feeds, expected):
            got = ex.main.run(feed)
            for name, theirs in zip(names, reference):
                why = compare(got[name], theirs)
                if why:
                    size = "x".join(map(str, next(iter(feed.values())).shape))
                    return {"outcome": "wrong", "stage": label,
                            "reason": f"output '{name}' at input {size}: {why}"}
    return {"outcome": "ok"}


def _tuned(model_bytes: bytes, target: str, layout: str) -> Any:
    import mlcir
    from mlcir.frontend import from_onnx
    from mlcir.tune import tune_module

    with tempfile.TemporaryDirectory(prefix="mlcir-fuzz-tune-") as work:
        module = from_onnx(model_bytes)
        if layout != "packed":
            module = _with_layout(module, layout)
        db = tune_module(module, target, work_dir=work, max_trials_global=TUNE_TRIALS,
                         num_trials_per_iter=4, verbose=0)
        return mlcir.build(from_onnx(model_bytes), target=target, layout=layout, records=db)


def _with_layout(module: Any, layout: str) -> Any:
    """The module tuned as the build of ``layout`` lowers it."""
    from mlcir.passes.layout_chains import set_module_layout

    set_module_layout(module, layout)
    return module


def handle(request: dict[str, Any]) -> dict[str, Any]:
    """A worker's answer to one request: a generated case, or a given model (shrinking)."""
    from .model_generator import generate

    if "model" in request:
        model_bytes = base64.b64decode(request["model"])
        feeds = [_unpack(f) for f in request["feeds"]]
        info: dict[str, Any] = {}
    else:
        generated = generate(request["model_seed"], request.get("max_nodes", 30))
        model_bytes, feeds = generated.model.SerializeToString(), generated.inputs
        info = {"dtype": generated.dtype, "symbolic": generated.symbolic,
                "nodes": len(generated.model.graph.node), "ops": sorted(set(generated.ops))}
    result = check_model(model_bytes, feeds, request["options"])
    return {"case": request["case"], **info, **request["options"], **result}


def _pack(feeds: dict[str, np.ndarray]) -> str:
    buffer = io.BytesIO()
    np.savez(buffer, **feeds)
    return base64.b64encode(buffer.getvalue()).decode()


def _unpack(text: str) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(base64.b64decode(text))) as data:
        return {k: data[k] for k in data.files}


# -- in the parent -----------------------------------------------------------------------------

def fuzz(cases: int, seed: int = 0, jobs: int = 1, timeout: float = 300.0,
         tune_fraction: float = 0.0, max_nodes: int = 30,
         progress: Any = None) -> list[dict[str, Any]]:
    """Run ``cases`` generated cases in ``jobs`` workers; each case's result, by case index."""
    requests = [{"case": case, "model_seed": case_seed(seed, case), "max_nodes": max_nodes,
                 "options": case_options(seed, case, tune_fraction)} for case in range(cases)]
    results = run_in_workers("mlcir.testing.fuzz_models", requests, jobs, timeout, progress)
    for request, result in zip(requests, results):
        result.setdefault("model_seed", request["model_seed"])
        result.setdefault("max_nodes", max_nodes)
        for key, value in request["options"].items():
            result.setdefault(key, value)
    return results


def shrink(model: Any, feeds: list[dict[str, np.ndarray]], options: dict[str, Any],
           outcome: str, timeout: float = 300.0, budget: int = 60,
           reason: str | None = None) -> Any:
    """The smallest model found that still ends in ``outcome`` (a refusal: for the same
    ``reason``, as :func:`reason_group` reads it) when built with ``options``: outputs dropped
    one at a time, nodes bypassed (their output replaced by a same-typed input), dead nodes
    removed; at most ``budget`` candidates are tried."""
    tries = 0

    def still_fails(candidate: Any) -> bool:
        nonlocal tries
        tries += 1
        return fails_alike(candidate, feeds, options, outcome, timeout, reason)

    changed = True
    while changed and tries < budget:
        changed = False
        for candidate in _smaller(model):
            if tries >= budget:
                break
            if still_fails(candidate):
                model, changed = candidate, True
                break
    return model


def fails_alike(model: Any, feeds: list[dict[str, np.ndarray]], options: dict[str, Any],
                outcome: str, timeout: float = 300.0, reason: str | None = None) -> bool:
    """Whether ``model`` run on ``feeds`` (in a worker) still ends in ``outcome`` (a refusal:
    for the same ``reason``)."""
    request = {"case": 0, "model": base64.b64encode(model.SerializeToString()).decode(),
               "feeds": [_pack(f) for f in feeds], "options": options}
    answer = run_in_workers("mlcir.testing.fuzz_models", [request], 1, timeout)[0]
    return answer["outcome"] == outcome and (
        reason is None or reason_group(answer.get("reason", "")) == reason_group(reason))


def smallest_sizes(model_seed: int, max_nodes: int,
                   fails: Callable[[Any], bool]) -> tuple[Any, int | None]:
    """The model of ``model_seed`` regenerated with the smallest cap on its sizes
    (:data:`SIZE_CAPS`) for which ``fails(generated)`` holds, and that cap; the model as drawn
    (cap None) when none fails. A cap changes only sizes, so the model usually keeps its ops."""
    from .model_generator import generate

    for cap in SIZE_CAPS:
        generated = generate(model_seed, max_nodes, max_size=cap)
        if fails(generated):
            return generated, cap
    return generate(model_seed, max_nodes), None


def shrink_feeds(model: Any, feeds: list[dict[str, np.ndarray]],
                 fails: Callable[[list[dict[str, np.ndarray]]], bool]
                 ) -> list[dict[str, np.ndarray]]:
    """Smaller inputs that still fail: one feed of several, then each symbolic dim of the
    graph inputs (a ``dim_param``, sliced alike in every input that has it) at size 1 or
    half its size."""
    if len(feeds) > 1:
        for one in feeds:
            if fails([one]):
                feeds = [one]
                break
    axes: dict[str, list[tuple[str, int]]] = {}
    for vi in model.graph.input:
        for axis, dim in enumerate(vi.type.tensor_type.shape.dim):
            if dim.HasField("dim_param") and dim.dim_param:
                axes.setdefault(dim.dim_param, []).append((vi.name, axis))
    for where in axes.values():
        name, axis = where[0]
        size = min(f[name].shape[axis] for f in feeds if name in f)
        for new in sorted({1, size // 2} - {0, size}):
            candidate = [{k: _cut(v, k, where, new) for k, v in f.items()} for f in feeds]
            if fails(candidate):
                feeds = candidate
                break
    return feeds


def _cut(value: np.ndarray, name: str, where: list[tuple[str, int]], size: int) -> np.ndarray:
    for input_name, axis in where:
        if input_name == name:
            value = np.take(value, range(min(size, value.shape[axis])), axis=axis)
    return np.ascontiguousarray(value)


def _smaller(model: Any):
    """Candidate models one step smaller than ``model``."""
    import onnx

    graph = model.graph
    if len(graph.output) > 1:
        for keep in range(len(graph.output)):
            yield _pruned(model, [graph.output[keep]])
    types = _value_types(model)
    for index in range(len(graph.node) - 1, -1, -1):
        node = graph.node[index]
        if len(node.output) != 1:
            continue
        out_type = types.get(node.output[0])
        for source in node.input:
            if source and types.get(source) == out_type and out_type is not None:
                candidate = onnx.ModelProto()
                candidate.CopyFrom(model)
                _bypass(candidate, index, source)
                yield _pruned(candidate, list(candidate.graph.output))
                break


def _value_types(model: Any) -> dict[str, Any]:
    import onnx

    inferred = onnx.shape_inference.infer_shapes(model)
    graph = inferred.graph
    return {vi.name: vi.type.SerializeToString()
            for vi in [*graph.input, *graph.value_info, *graph.output]}


def _bypass(model: Any, index: int, source: str) -> None:
    """Remove node ``index``; its users (and the outputs) read ``source`` instead."""
    graph = model.graph
    removed = graph.node[index].output[0]
    del graph.node[index]
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name == removed:
                node.input[i] = source
    names = [o.name for o in graph.output]
    for i in reversed(range(len(graph.output))):
        if graph.output[i].name == removed:
            if source in names:
                del graph.output[i]
            else:
                graph.output[i].name = source


def _pruned(model: Any, outputs: list[Any]) -> Any:
    """``model`` with only ``outputs`` and the nodes and initializers they need."""
    import onnx

    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    del graph.output[:]
    graph.output.extend(outputs)
    needed = {o.name for o in outputs}
    keep = []
    for node in reversed(list(graph.node)):
        if any(name in needed for name in node.output):
            keep.append(node)
            needed.update(name for name in node.input if name)
    del graph.node[:]
    graph.node.extend(reversed(keep))
    initializers = [t for t in graph.initializer if t.name in needed]
    del graph.initializer[:]
    graph.initializer.extend(initializers)
    return out


def write_failure(result: dict[str, Any], out_dir: Path, timeout: float = 300.0) -> Path:
    """Shrink a failing case (sizes, nodes, inputs) and write it as
    ``<outcome>-<model_seed>.onnx`` (+ ``.npz`` and the case as ``.json``)."""
    import onnx

    options = {k: result[k] for k in ("threads", "layout", "tune")}
    outcome = result["outcome"]
    generated, cap = smallest_sizes(
        result["model_seed"], result.get("max_nodes", 30),
        lambda g: fails_alike(g.model, g.inputs, options, outcome, timeout))
    result = {**result, "max_size": cap}
    model = shrink(generated.model, generated.inputs, options, outcome, timeout)
    feeds = shrink_feeds(model, generated.inputs,
                         lambda f: fails_alike(model, f, options, outcome, timeout))
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / f"{result['outcome']}-{result['model_seed']}"
    onnx.save(model, stem.with_suffix(".onnx"))
    np.savez(stem.with_suffix(".npz"), **{f"{k}@{i}": v for i, f in enumerate(feeds)
                                          for k, v in f.items()})
    stem.with_suffix(".json").write_text(json.dumps(result, indent=1))
    return stem.with_suffix(".onnx")


def reason_group(reason: str) -> str:
    """A refusal reason without its particulars (node names, numbers, shapes)."""
    import re

    reason = re.sub(r"'[^']*'", "'X'", reason)
    reason = re.sub(r"\"[^\"]*\"", "'X'", reason)
    reason = re.sub(r"tensor<[^>]*>", "tensor<..>", reason)
    reason = re.sub(r"\d+", "N", reason)
    return reason.split("\n")[0][:160]


def summary(results: list[dict[str, Any]]) -> str:
    lines = [outcome_counts(results)]
    kinds = Counter((r.get("dtype"), r.get("symbolic")) for r in results)
    lines.append("by kind: " + ", ".join(f"{d}{' symbolic' if s else ''} {n}"
                                         for (d, s), n in sorted(kinds.items(), key=str)))
    tuned = [r for r in results if r.get("tune")]
    if tuned:
        lines.append(f"tuned: {len(tuned)} cases, "
                     f"{sum(r['outcome'] == 'ok' for r in tuned)} ok")
    lines += refusal_counts(results, reason_group)
    for r in results:
        if r["outcome"] in BAD:
            lines.append(f"{r['outcome']}: case {r['case']} (model seed {r['model_seed']}, "
                         f"threads {r['threads']}, layout {r['layout']}): {r.get('reason')}"[:600])
    return "\n".join(lines)


def _progress(result: dict[str, Any]) -> None:
    """A line per case on stderr, with the reason where it is not ok (a run stopped early
    still says what it found)."""
    why = f" ({result.get('reason', '')})"[:400] if result["outcome"] != "ok" else ""
    print(f"case {result['case']}: {result['outcome']}{why}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = fuzzer_arguments(__doc__.split("\n\n")[0])
    parser.add_argument("--max-nodes", type=int, default=30)
    parser.add_argument("--tune", type=float, default=0.0, metavar="FRACTION",
                        help=f"the fraction of cases also tuned ({TUNE_TRIALS} trials)")
    parser.add_argument("--out", type=Path, help="write shrunk failing models here")
    args = parser.parse_args(argv)
    if args.worker:
        return serve(handle)
    results = fuzz(args.cases, args.seed, args.jobs, args.timeout, args.tune, args.max_nodes,
                   progress=_progress)
    if args.json:
        write_results(args.json, results)
    print(summary(results))
    if args.out:
        for r in results:
            if r["outcome"] in BAD:
                print(f"shrunk: {write_failure(r, args.out, args.timeout)}")
    return 0 if not any(r["outcome"] in BAD for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
