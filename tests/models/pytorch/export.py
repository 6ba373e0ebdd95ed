"""How the ONNX files beside this script were made (not run by the tests: PyTorch is not a
dependency of mlcir). They are real exporter output — the TorchScript exporter (``*_ts``,
opset 17) and the dynamo exporter (``*_dynamo``, opset 18, weights in ``.onnx.data`` external
data) — with the shape arithmetic, Constant nodes and naming exporters really write, which
hand-built test models do not have. Re-create them with torch 2.13 and onnxscript:

    python tests/models/pytorch/export.py

``tests/models/export_real.py`` re-exports the same models with a dynamic batch axis.
"""
import os

import torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)

class LeNet(nn.Module):
    def __init__(s):
        super().__init__()
        s.c1 = nn.Conv2d(1, 6, 5, padding=2)
        s.c2 = nn.Conv2d(6, 16, 5)
        s.f1 = nn.Linear(16*5*5, 120)
        s.f2 = nn.Linear(120, 84)
        s.f3 = nn.Linear(84, 10)
    def forward(s, x):
        x = F.max_pool2d(F.relu(s.c1(x)), 2)
        x = F.max_pool2d(F.relu(s.c2(x)), 2)
        x = torch.flatten(x, 1)
        return F.log_softmax(s.f3(F.relu(s.f2(F.relu(s.f1(x))))), dim=1)

class Block(nn.Module):
    def __init__(s, c=16):
        super().__init__()
        s.c1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        s.b1 = nn.BatchNorm2d(c)
        s.c2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        s.b2 = nn.BatchNorm2d(c)
        s.dw = nn.Conv2d(c, c, 3, padding=1, groups=c)
        s.pool = nn.AdaptiveAvgPool2d(1)
        s.fc = nn.Linear(c, 10)
    def forward(s, x):
        y = F.relu(s.b1(s.c1(x)))
        y = s.b2(s.c2(y))
        y = F.relu(y + x)
        y = F.hardtanh(s.dw(y))
        return s.fc(torch.flatten(s.pool(y), 1))

class Attn(nn.Module):
    def __init__(s):
        super().__init__()
        s.enc = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, batch_first=True, dropout=0.0)
    def forward(s, x): return s.enc(x)

def examples() -> list[tuple[str, nn.Module, torch.Tensor]]:
    """Each model (in eval mode) with its example input (batch 1)."""
    out = [("lenet", LeNet(), torch.randn(1, 1, 28, 28)), ("block", Block(), torch.randn(1, 16, 8, 8)),
           ("attn", Attn(), torch.randn(1, 10, 32))]
    for _, m, _ in out:
        m.eval()
    return out


if __name__ == "__main__":
    os.chdir(os.path.dirname(os.path.abspath(__file__)))
    for name, m, x in examples():
        for dynamo in (False, True):
            if dynamo and name == "lenet":
                continue  # the TorchScript export of it suffices (its weights are the bulk)
            path = f"{name}_{'dynamo' if dynamo else 'ts'}.onnx"
            try:
                torch.onnx.export(m, (x,), path, dynamo=dynamo, input_names=["x"], output_names=["y"], opset_version=17 if not dynamo else 18)
                print("exported", path)
            except Exception as e:  # noqa: BLE001 - report it and export the others
                print("FAILED", path, type(e).__name__, str(e)[:200])
