"""Step 1 of the walkthrough (docs/walkthrough.md): an image as the model's input.

    python preprocess.py [IMAGE] [-o imagenet_cat.npz] [--size 224]

Reads IMAGE with Pillow when both are there; otherwise makes a synthetic image (a seeded
pattern; nothing is downloaded). Resized to ``--size`` x ``--size``, scaled to [0, 1],
normalised with the ImageNet mean and standard deviation, laid out NCHW, and saved under the
input name the zoo's ResNet models use, ``data``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


def load_image(path: str | None, size: int) -> np.ndarray:
    """``[size, size, 3]`` RGB values in [0, 1]."""
    if path:
        try:
            from PIL import Image
        except ImportError:
            print("preprocess: Pillow is not installed; using a synthetic image",
                  file=sys.stderr)
        else:
            image = Image.open(path).convert("RGB").resize((size, size))
            return np.asarray(image, np.float32) / 255.0
    y, x = np.mgrid[0:size, 0:size].astype(np.float32) / size
    rng = np.random.default_rng(0)
    pattern = np.stack([np.sin(6 * x + 1), np.cos(5 * y), np.sin(4 * (x + y))], axis=-1)
    return np.clip(0.5 + 0.4 * pattern + 0.05 * rng.standard_normal(pattern.shape), 0, 1)


def preprocess(image: np.ndarray) -> np.ndarray:
    """``[1, 3, H, W]`` float32, normalised as the zoo's ImageNet models expect."""
    normalised = (image.astype(np.float32) - MEAN) / STD
    return np.ascontiguousarray(normalised.transpose(2, 0, 1)[None])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("image", nargs="?", help="an image file (needs Pillow)")
    parser.add_argument("-o", "--output", default="imagenet_cat.npz")
    parser.add_argument("--size", type=int, default=224)
    args = parser.parse_args(argv)
    data = preprocess(load_image(args.image, args.size))
    np.savez(args.output, data=data)
    print(f"preprocess: wrote {Path(args.output)} (data: float32{list(data.shape)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
