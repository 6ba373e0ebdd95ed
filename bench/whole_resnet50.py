"""Whole ResNet-50 (bench/compile_time.py's) untuned against onnxruntime, 1 thread, in turns."""
import os, sys, time
for n in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
    os.environ.pop(n, None)
import numpy as np
root = sys.argv[1]
sys.path.insert(0, os.path.join(root, "bench"))
import onnxruntime as ort
import compile_time as ct
import mlcir
from mlcir.frontend import from_onnx
model = ct.resnet50()
inputs = ct.model_inputs(model)
t0 = time.perf_counter()
ex = mlcir.build(from_onnx(model), "llvm -threads=1")
f = ex.main
f(**inputs)
build = time.perf_counter() - t0
opts = ort.SessionOptions(); opts.intra_op_num_threads = 1; opts.inter_op_num_threads = 1
sess = ort.InferenceSession(model.SerializeToString(), opts)
ref = sess.run(None, inputs)[0]
got = np.asarray(f(**inputs))
print("max abs err", float(np.abs(got - ref).max()), "scale", float(np.abs(ref).max()))
ours, theirs = [], []
for _ in range(15):
    t = time.perf_counter(); f(**inputs); ours.append(time.perf_counter() - t)
    t = time.perf_counter(); sess.run(None, inputs); theirs.append(time.perf_counter() - t)
m, o = np.median(ours), np.median(theirs)
print(f"{root}: build+first call {build:.1f} s; mlcir {m*1e3:.1f} ms, onnxruntime {o*1e3:.1f} ms, ort/mlcir {o/m:.3f}")
