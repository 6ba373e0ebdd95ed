"""The course's MLP, end to end from the graph dialect to numbers, three ways."""

from __future__ import annotations

import numpy as np
import pytest

import mlcir
from mlcir.passes.bind_params import bind_params
from mlcir.testing import mlp


@pytest.fixture(scope="module")
def params():
    mlp.register_library()
    return mlp.random_params(seed=0)


@pytest.fixture(scope="module")
def x():
    return np.random.default_rng(42).standard_normal((1, 784)).astype(np.float32)


@pytest.mark.parametrize("variant", mlp.VARIANTS)
def test_mlp_variant_matches_numpy(variant, params, x):
    ex = mlcir.build(mlp.build_module(variant))
    y = ex.main(x, params["w0"], params["b0"], params["w1"], params["b1"])
    ref = mlp.reference(x, params)
    assert y.shape == (1, 10) and y.dtype == np.float32
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


def test_mlp_with_bound_parameters(params, x):
    module = mlp.build_module("compiled")
    with module.context:
        bind_params(module, params)
        text = str(module)
    assert text.count("arith.constant dense") >= 4  # the four weights are now constants
    ex = mlcir.build(module)
    assert [a.name for a in ex.main.signature.args] == ["x"]
    ref = mlp.reference(x, params)
    np.testing.assert_allclose(ex.main(x), ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


def test_bind_params_rejects_unknown_names_and_bad_shapes(params):
    module = mlp.build_module("compiled")
    with module.context:
        with pytest.raises(mlcir.PassError, match="no parameter named nope"):
            bind_params(module, {"nope": params["w0"]})
        with pytest.raises(mlcir.PassError, match=r"parameter 'w0' of 'main' is tensor<128x784xf32>, "
                                                  r"the array is float32\[784, 128\]"):
            bind_params(module, {"w0": params["w0"].T.copy()})


@pytest.mark.usefixtures("params")  # registers the library functions
def test_mixed_module_keeps_the_hand_written_kernel():
    module = mlp.build_module("mixed")
    text = str(module)
    assert "func.func private @linear0" in text and 'loop.block = "Y"' in text
    assert 'graph.library = "env.relu"' in text and 'graph.library = "env.linear"' in text
