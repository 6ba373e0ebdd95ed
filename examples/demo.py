"""The main demo (``bash run.sh demo``): see README.md.

1. ``onnx_demo.py``: the shipped, trained digits MLP imported from ONNX, compiled, tuned
   briefly, saved and loaded back, run on the test images: predictions, accuracy, and latency
   next to onnxruntime (as called, and the compiled code alone).
2. ``mlp_demo.py``: the MLC course's MLP written in the graph dialect, built as compiled
   kernels, library calls and their mixture, next to numpy.

Arguments are passed to the ONNX demo (``--trials N``, ``--work-dir DIR``).
"""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

for _name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # numpy's best kernel (MLIR notes)
    os.environ.pop(_name, None)

HERE = Path(__file__).resolve().parent


def run(script: str, argv: list[str]) -> None:
    print(f"\n==== {script} ====", flush=True)
    sys.argv = [str(HERE / script), *argv]
    runpy.run_path(str(HERE / script), run_name="__main__")


if __name__ == "__main__":
    run("onnx_demo.py", sys.argv[1:])
    run("mlp_demo.py", [])
