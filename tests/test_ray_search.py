"""What the nodes of a Ray cluster compute for the tuner, without a cluster: the search's
candidates (the same as the driver's for the same seeds) and a workload's reference data."""

from __future__ import annotations

import io
import random

import numpy as np
import pytest

from mlcir.ir import parse
from mlcir.target import Target
from mlcir.testing.kernels import matmul
from mlcir.tune.cost_model import RandomModel
from mlcir.tune.features import LoopNestFeatures
from mlcir.tune.search import EvolutionarySearch, SearchContext, make_candidates
from mlcir.tune.space import default_space

remote = pytest.importorskip("mlcir.tune.distributed.remote",
                             reason="ray is not installed (pip install mlcir[ray])")
pytestmark = pytest.mark.usefixtures("ctx")
TARGET = Target.parse("llvm -threads=1")


class NodeMaker:
    """Makes each batch as a node does: in a context of its own, from the kernel's text."""

    def __init__(self):
        self.jobs = 0

    def make(self, cx, jobs):
        self.jobs += len(jobs)
        text = str(cx.kernel)
        shared = (str(hash(text)), text, cx.space, LoopNestFeatures())
        half = len(jobs) // 2  # two chunks, as on two one-CPU nodes
        return (remote.make_candidates._function(shared, jobs[:half])
                + remote.make_candidates._function(shared, jobs[half:]))


def context(maker=None) -> SearchContext:
    return SearchContext(parse(matmul(32, 32, 32)[0]), default_space(TARGET), RandomModel(0),
                         LoopNestFeatures(), random.Random(7), maker=maker)


def test_a_node_makes_the_candidates_the_driver_would():
    jobs = [(None, 11), (None, 12)]
    here = make_candidates(context(), jobs)
    assert all(c is not None for c in here)
    jobs += [(here[0].trace, 13), (here[1].trace, 14)]
    here = make_candidates(context(), jobs)
    there = make_candidates(context(NodeMaker()), jobs)
    assert [(c.key, c.trace, c.features) for c in there] == \
        [(c.key, c.trace, c.features) for c in here]


def test_the_search_proposes_the_same_candidates_wherever_they_are_made():
    search = EvolutionarySearch(population=8, generations=2)
    maker = NodeMaker()
    here = search.generate(context(), 4)
    there = search.generate(context(maker), 4)
    assert maker.jobs >= 8  # the initial samples and the mutants were made "on the nodes"
    assert len(here) == 4
    assert [c.key for c in there] == [c.key for c in here]


def test_the_reference_data_is_the_kernels_result_on_its_random_inputs():
    answer, data = remote.make_reference(matmul(8, 8, 8)[0])
    with np.load(io.BytesIO(data)) as arrays:
        a, b, c = arrays["input0"], arrays["input1"], arrays["output0"]
    assert a.shape == b.shape == c.shape == (8, 8)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    assert [arg["shape"] for arg in answer["signature"]["args"]] == [[8, 8], [8, 8]]
    assert len(answer["hash"]) == 24


def test_a_chunk_whose_node_is_lost_is_made_here(monkeypatch):
    import ray

    from mlcir.tune.distributed.cluster import Node
    from mlcir.tune.distributed.search import RayCandidateMaker

    class Runner:
        def nodes(self):
            return [Node("a" * 56, 1, None, {}), Node("b" * 56, 1, None, {})]

    class Task:
        def options(self, **_):
            return self

        def remote(self, _shared, chunk):
            return chunk

    on_node = remote.make_candidates._function

    def get(chunk):  # the first chunk comes back from its node, the second's node was lost
        if chunk == second:
            raise ray.exceptions.WorkerCrashedError()
        return on_node(shared, chunk)

    cx = context()
    text = str(cx.kernel)
    shared = ("k", text, cx.space, cx.feature_extractor)
    jobs = [(None, 21), (None, 22), (None, 23), (None, 24)]
    second = jobs[2:]
    monkeypatch.setattr(remote, "make_candidates", Task())
    monkeypatch.setattr(ray, "put", lambda value: value)
    monkeypatch.setattr(ray, "get", get)
    made = RayCandidateMaker(Runner()).make(cx, jobs)
    assert [c.key for c in made] == [c.key for c in make_candidates(context(), jobs)]
