"""Step 3 of the walkthrough (docs/walkthrough.md): the top-5 classes of the predictions.

    python postprocess.py [predictions.npz] [--labels synset.txt] [--top 5]

Softmax over the model's scores (the zoo's ResNet outputs logits), then the five most
probable classes with their scores: named by ``--labels`` (one label a line, as the zoo's
``synset.txt``), else by index.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np


def top_classes(scores: np.ndarray, labels: list[str] | None = None,
                top: int = 5) -> list[tuple[str, float]]:
    logits = np.asarray(scores, np.float64).reshape(-1)
    probabilities = np.exp(logits - logits.max())
    probabilities /= probabilities.sum()
    order = np.argsort(-probabilities)[:top]
    return [(labels[i] if labels and i < len(labels) else f"class {i}",
             float(probabilities[i])) for i in order]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("predictions", nargs="?", default="predictions.npz")
    parser.add_argument("--labels", help="one class label a line")
    parser.add_argument("--top", type=int, default=5)
    args = parser.parse_args(argv)
    with np.load(args.predictions) as outputs:
        scores = outputs[outputs.files[0]]
    labels = None
    if args.labels:
        with open(args.labels, encoding="utf-8") as f:
            labels = [line.strip() for line in f]
    for name, p in top_classes(scores, labels, args.top):
        print(f"{name}: probability {p:.5f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
