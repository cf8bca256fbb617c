"""Random op graphs (``burn.testing._random_graphs``, as in burn-wgpu's test_property_graphs.py) on fused
CUDA, against burn's numpy backend unfused: each graph is called five times with other input values and
scalars each call (plan, replay, then a captured CUDA graph, ``burn_cuda._graphs``), every call checked,
then captured with ``burn.ir`` and replayed on CUDA. Derandomized, a fixed example budget
(``BURN_PROPERTY_EXAMPLES=N`` runs more)."""

from __future__ import annotations

from typing import Any

import pytest
from burn.testing import _random_graphs as rg
from hypothesis import given

pytestmark = pytest.mark.gpu

CALLS = 5


@rg.ci_settings(150)
@given(rg.graphs())
def test_random_graph_matches_numpy_on_fused_cuda(cuda: Any, graph: rg.RandomGraph) -> None:
    rg.check_calls_and_replay(graph, cuda, "cuda", CALLS)


def test_the_cuda_runs_reach_captured_graphs(cuda: Any) -> None:
    """The five calls per graph above reach a captured CUDA graph's launch, and each launch's outputs
    follow the call's inputs and scalars."""
    steps = [
        rg.Step("transformer", (2, True, "gelu")),
        rg.Step("scalar", ("mul", 2.0)),
        rg.Step("linear", (5,)),
    ]
    grew = rg.fixed_graph_calls(cuda, steps, CALLS, "cuda fused")
    assert grew["replays"] > 0
    assert grew["graph_launches"] > 0, cuda.backend.runtime.capture_failures
