"""lit configuration: mlcir's FileCheck tests, run with the real LLVM FileCheck and not."""

import os
import sys

import lit.formats

config.name = "mlcir"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".py"]
config.excludes = ["lit.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)

# The interpreter running lit has mlcir installed; its bin/ holds mlcir-opt and mlcir.
import mlir.ir  # noqa: E402  (locates the wheels)

mlir_dir = os.path.dirname(mlir.ir.__file__)
llvm_bin = os.path.join(os.path.dirname(mlir_dir), "llvm", "bin")
mlir_bin = os.path.join(mlir_dir, "bin")
venv_bin = os.path.dirname(sys.executable)
config.environment["PATH"] = os.pathsep.join(
    [llvm_bin, mlir_bin, venv_bin, config.environment.get("PATH", os.environ.get("PATH", ""))])
config.environment["FILECHECK_OPTS"] = "-enable-var-scope --allow-unused-prefixes=false"
config.environment["PYTHONUNBUFFERED"] = "1"
for var in ("HOME", "TMPDIR", "OMP_NUM_THREADS", "MLCIR_TEST_GPU"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
config.substitutions.append(("%PYTHON", sys.executable))
config.substitutions.append(("%irdl_dir", os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "dialects")))

# Optional hardware as lit features, so GPU tests are UNSUPPORTED (skipped) without one.
from mlcir.testing.hardware import cuda_available  # noqa: E402

if cuda_available():
    config.available_features.add("cuda")
