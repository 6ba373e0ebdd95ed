"""The main demo (``bash run.sh demo``): see README.md."""

from __future__ import annotations

import runpy
from pathlib import Path

if __name__ == "__main__":
    runpy.run_path(str(Path(__file__).with_name("mlp_demo.py")), run_name="__main__")
