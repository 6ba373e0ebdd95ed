"""How the ONNX files beside this script were made (not run by the tests: PyTorch is not a
dependency of mlcir). Small PyTorch functions that make the exporters write the ops of issue
21's second item — Einsum, ArgMax, TopK, CumSum, Trilu, GatherND, ScatterND,
ScatterElements, Resize, DepthToSpace/SpaceToDepth, InstanceNormalization, GroupNormalization,
Pad, Mod, Sign, Floor/Ceil/Round, Min/Max — each exported by the TorchScript exporter
(``*_ts``, opset 17) and the dynamo exporter (``*_dynamo``, opset 18), with the inputs the
tests feed them (``<name>.npz``). Re-create them with torch 2.13 and onnxscript:

    python tests/models/ops/export.py
"""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Attention(nn.Module):
    def forward(self, q, k, v):
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / 2.0
        return torch.einsum("bhqk,bhkd->bhqd", scores.softmax(-1), v)


class Selection(nn.Module):
    def forward(self, x, mask):
        values, indices = torch.topk(x, 3, dim=1)
        positions = torch.cumsum(mask, dim=1) * mask
        return x.argmax(-1), values, indices, positions, torch.triu(x, 1), torch.tril(x, -1)


class Indexing(nn.Module):
    def forward(self, x, rows, cols, src):
        picked = x[rows, cols]
        scattered = x.scatter(1, cols.view(1, -1).expand(x.shape[0], -1), src)
        added = x.scatter_add(0, rows.view(-1, 1).expand(-1, x.shape[1]), x[:3] * 2)
        put = x.index_put((rows,), x[:3] + 1)
        return picked, scattered, added, put


class Images(nn.Module):
    def __init__(self):
        super().__init__()
        self.inorm = nn.InstanceNorm2d(8, affine=True)
        self.gnorm = nn.GroupNorm(2, 8)
        with torch.no_grad():
            for p in (*self.inorm.parameters(), *self.gnorm.parameters()):
                p.uniform_(0.5, 1.5)

    def forward(self, x):
        up = F.interpolate(x, scale_factor=2, mode="nearest")
        bilinear = F.interpolate(x, size=(7, 9), mode="bilinear", align_corners=False)
        corners = F.interpolate(x, scale_factor=1.5, mode="bilinear", align_corners=True)
        shuffled = F.pixel_unshuffle(F.pixel_shuffle(x, 2), 2)
        padded = F.pad(x, (1, 2, 2, 1), mode="reflect") + F.pad(x, (1, 2, 2, 1), mode="replicate")
        return up, bilinear, corners, shuffled, padded, self.inorm(x), self.gnorm(x)


class Arithmetic(nn.Module):
    def forward(self, x, n):
        return (torch.remainder(n, 3), torch.fmod(x, 0.7), torch.sign(x), torch.floor(x),
                torch.round(x), torch.ceil(x), torch.minimum(torch.maximum(x, -x * 0.5), x + 1))


def inputs(name):
    g = torch.Generator().manual_seed(1)
    if name == "attention":
        return tuple(torch.randn(2, 4, 6, 8, generator=g) for _ in range(3))
    if name == "selection":
        mask = torch.tensor([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 0]], dtype=torch.int64)
        return torch.randn(2, 6, generator=g), mask
    if name == "indexing":
        return (torch.randn(5, 4, generator=g), torch.tensor([3, 0, 4]), torch.tensor([1, 3, 2]),
                torch.randn(5, 3, generator=g))
    if name == "images":
        return (torch.randn(1, 8, 4, 6, generator=g),)
    n = torch.randint(-9, 9, (3, 4), generator=g)
    return torch.randn(3, 4, generator=g) * 3, n


os.chdir(os.path.dirname(os.path.abspath(__file__)))
for name, module in [("attention", Attention()), ("selection", Selection()),
                     ("indexing", Indexing()), ("images", Images()),
                     ("arithmetic", Arithmetic())]:
    module.eval()
    args = inputs(name)
    names = [f"in{i}" for i in range(len(args))]
    np.savez(f"{name}.npz", **{n: a.numpy() for n, a in zip(names, args)})
    for dynamo in (False, True):
        path = f"{name}_{'dynamo' if dynamo else 'ts'}.onnx"
        try:
            torch.onnx.export(module, args, path, dynamo=dynamo, input_names=names,
                              opset_version=18 if dynamo else 17, external_data=False)
            print("exported", path)
        except Exception as e:  # noqa: BLE001 - report it and export the others
            print("FAILED", path, type(e).__name__, str(e)[:300])
