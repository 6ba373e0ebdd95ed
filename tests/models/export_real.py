"""How the real exports in ``tests/models/real/`` were made (not run by the tests: PyTorch is not
a dependency of mlcir). Random weights (``torch.manual_seed(0)``), no downloads
(``HF_HUB_OFFLINE=1``), PyTorch's TorchScript exporter at opset 17:

- ``bert_static.onnx`` / ``bert_dynamic.onnx``: a 2-layer transformers ``BertModel``
  (vocab 1000, hidden 256, 4 heads) with ``input_ids`` and an ``attention_mask`` (with
  padding); the dynamic one has symbolic ``batch`` and ``sequence`` axes, so the exporter
  computes its reshape targets at run time (Shape -> Gather -> Concat -> Reshape);
- ``mobilenet_v2.onnx``: torchvision's MobileNetV2 (width 0.5, 10 classes);
- ``lenet_dyn.onnx``, ``block_dyn.onnx``, ``attn_dyn.onnx``: the models of
  ``tests/models/pytorch/export.py`` with a dynamic ``batch`` axis.

Re-create them in a virtual environment with torch (the full wheel), torchvision,
transformers, onnx and onnxscript:

    HF_HUB_OFFLINE=1 python tests/models/export_real.py
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
OUT = HERE / "real"


def export(model: torch.nn.Module, args: tuple, path: Path, input_names: list[str],
           output_names: list[str], dynamic_axes: dict | None = None) -> None:
    model.eval()
    torch.onnx.export(model, args, str(path), dynamo=False, opset_version=17,
                      input_names=input_names, output_names=output_names,
                      dynamic_axes=dynamic_axes, do_constant_folding=True)
    print(f"exported {path.relative_to(HERE)} ({path.stat().st_size / 1e6:.1f} MB)")


class _Bert(torch.nn.Module):
    """BertModel called with positional tensors and returning a tuple (what tracing needs)."""

    def __init__(self, bert: torch.nn.Module) -> None:
        super().__init__()
        self.bert = bert

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple:
        out = self.bert(input_ids=input_ids, attention_mask=attention_mask)
        return out.last_hidden_state, out.pooler_output


def bert() -> None:
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=1000, hidden_size=256, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=512,
                        max_position_embeddings=128, attn_implementation="eager")
    model = _Bert(BertModel(config))
    ids = torch.randint(0, 1000, (2, 16))
    mask = torch.ones(2, 16, dtype=torch.int64)
    mask[1, 10:] = 0  # the second sequence is padded
    names = ["input_ids", "attention_mask"]
    outputs = ["last_hidden_state", "pooler_output"]
    export(model, (ids, mask), OUT / "bert_static.onnx", names, outputs)
    axes = {"input_ids": {0: "batch", 1: "sequence"},
            "attention_mask": {0: "batch", 1: "sequence"},
            "last_hidden_state": {0: "batch", 1: "sequence"}, "pooler_output": {0: "batch"}}
    export(model, (ids, mask), OUT / "bert_dynamic.onnx", names, outputs, axes)


def mobilenet() -> None:
    from torchvision.models import mobilenet_v2

    torch.manual_seed(0)
    model = mobilenet_v2(weights=None, width_mult=0.5, num_classes=10)
    export(model, (torch.randn(1, 3, 224, 224),), OUT / "mobilenet_v2.onnx", ["x"], ["y"])


def pytorch_models_dynamic() -> None:
    """LeNet, Block and Attn of tests/models/pytorch/export.py with a dynamic batch."""
    spec = importlib.util.spec_from_file_location("models", HERE / "pytorch" / "export.py")
    models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(models)  # type: ignore[union-attr]
    torch.manual_seed(0)
    for name, model, x in models.examples():
        export(model, (x,), OUT / f"{name}_dyn.onnx", ["x"], ["y"],
               {"x": {0: "batch"}, "y": {0: "batch"}})


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    OUT.mkdir(exist_ok=True)
    bert()
    mobilenet()
    pytorch_models_dynamic()
