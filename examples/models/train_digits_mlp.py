"""Train a small MLP on scikit-learn's digits and export it to ONNX: the demo's real model.

    python examples/models/train_digits_mlp.py [--out-dir DIR] [--epochs N]

The data set is ``sklearn.datasets.load_digits`` (1797 8x8 grey images, shipped with
scikit-learn, no download). Pixels are scaled by 1/16 to [0, 1]; the split is a fixed 80/20
``train_test_split(test_size=0.2, random_state=0)`` (not stratified). The network,
64 -> 64 -> 10,

    image[1,64] -> Gemm(w0[64,64], b0, transB=1) -> Relu -> Gemm(w1[10,64], b1, transB=1)
                -> Softmax(axis=-1) -> probabilities[1,10]

is trained with plain numpy (full-batch Adam on the cross-entropy, a little L2, seed 0);
scikit-learn only loads and splits the data. The script writes, next to itself:

- ``digits_mlp.onnx``: opset 17, input ``image`` with a FIXED batch of 1 (``[1, 64]``), so a
  compiler can specialise every shape; run it once per image.
- ``digits_test.npz``: ``images`` (float32 [n_test, 64], already scaled by 1/16) and
  ``labels`` (int64 [n_test]), the held-out 20%.

and prints the test accuracy from numpy and from onnxruntime, which must agree.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

HIDDEN = 64
CLASSES = 10
SEED = 0


def load_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=0.2, random_state=0)
    return x_train, x_test, y_train, y_test


def forward(params: dict[str, np.ndarray], x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hidden activations and logits (weights in Gemm's transB layout: ``w[out, in]``)."""
    h = np.maximum(x @ params["w0"].T + params["b0"], 0)
    return h, h @ params["w1"].T + params["b1"]


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def train(x: np.ndarray, y: np.ndarray, epochs: int, lr: float = 1e-2,
          weight_decay: float = 1e-4) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(SEED)
    n_in = x.shape[1]
    params = {
        "w0": rng.standard_normal((HIDDEN, n_in)) * np.sqrt(2.0 / n_in),
        "b0": np.zeros(HIDDEN),
        "w1": rng.standard_normal((CLASSES, HIDDEN)) * np.sqrt(1.0 / HIDDEN),
        "b1": np.zeros(CLASSES),
    }  # float64 while training; exported as float32
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v = {k: np.zeros_like(v) for k, v in params.items()}
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    x = x.astype(np.float64)
    onehot = np.eye(CLASSES)[y]
    n = len(x)
    for step in range(1, epochs + 1):
        h, logits = forward(params, x)
        dlogits = (softmax(logits) - onehot) / n
        grads = {"w1": dlogits.T @ h, "b1": dlogits.sum(axis=0)}
        dh = (dlogits @ params["w1"]) * (h > 0)
        grads["w0"] = dh.T @ x
        grads["b0"] = dh.sum(axis=0)
        for k in params:
            g = grads[k] + (weight_decay * params[k] if k.startswith("w") else 0.0)
            m[k] = beta1 * m[k] + (1 - beta1) * g
            v[k] = beta2 * v[k] + (1 - beta2) * g * g
            m_hat = m[k] / (1 - beta1 ** step)
            v_hat = v[k] / (1 - beta2 ** step)
            params[k] = params[k] - lr * m_hat / (np.sqrt(v_hat) + eps)
    return {k: p.astype(np.float32) for k, p in params.items()}


def to_onnx(params: dict[str, np.ndarray]) -> onnx.ModelProto:
    nodes = [
        helper.make_node("Gemm", ["image", "w0", "b0"], ["fc0"], name="fc0", transB=1),
        helper.make_node("Relu", ["fc0"], ["relu0"], name="relu0"),
        helper.make_node("Gemm", ["relu0", "w1", "b1"], ["logits"], name="fc1", transB=1),
        helper.make_node("Softmax", ["logits"], ["probabilities"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "digits_mlp",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [1, CLASSES])],
        initializer=[numpy_helper.from_array(params[k], k) for k in ("w0", "b0", "w1", "b1")],
        doc_string="64-64-10 MLP trained on sklearn digits (pixels / 16); batch fixed at 1.")
    opsets = [helper.make_opsetid("", 17)]
    model = helper.make_model(graph, opset_imports=opsets,
                              producer_name="mlcir examples/models/train_digits_mlp.py",
                              ir_version=helper.find_min_ir_version_for(opsets))
    onnx.checker.check_model(model, full_check=True)
    return model


def onnxruntime_predictions(path: Path, images: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return np.array([int(session.run(["probabilities"], {"image": img[None, :]})[0].argmax())
                     for img in images])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, default=Path(__file__).resolve().parent)
    parser.add_argument("--epochs", type=int, default=400)
    args = parser.parse_args()

    x_train, x_test, y_train, y_test = load_data()
    params = train(x_train, y_train, args.epochs)
    train_acc = float((forward(params, x_train)[1].argmax(axis=1) == y_train).mean())
    numpy_pred = forward(params, x_test)[1].argmax(axis=1)
    numpy_acc = float((numpy_pred == y_test).mean())

    args.out_dir.mkdir(parents=True, exist_ok=True)
    model_path = args.out_dir / "digits_mlp.onnx"
    data_path = args.out_dir / "digits_test.npz"
    onnx.save(to_onnx(params), model_path)
    np.savez_compressed(data_path, images=x_test.astype(np.float32),
                        labels=y_test.astype(np.int64))

    ort_pred = onnxruntime_predictions(model_path, x_test)
    ort_acc = float((ort_pred == y_test).mean())
    print(f"train {len(x_train)} / test {len(x_test)} samples, {args.epochs} epochs")
    print(f"train accuracy (numpy):       {train_acc:.4f}")
    print(f"test accuracy (numpy):        {numpy_acc:.4f}")
    print(f"test accuracy (onnxruntime):  {ort_acc:.4f}")
    print(f"wrote {model_path} ({model_path.stat().st_size} bytes), "
          f"{data_path} ({data_path.stat().st_size} bytes)")
    disagree = int((ort_pred != numpy_pred).sum())
    if disagree:
        raise SystemExit(f"numpy and onnxruntime disagree on {disagree} test images")
    if ort_acc < 0.95:
        raise SystemExit(f"test accuracy {ort_acc:.4f} is below 0.95")


if __name__ == "__main__":
    main()
