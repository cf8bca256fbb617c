"""Random op graphs (``burn.testing._random_graphs``, as in burn-wgpu's test_property_graphs.py) on fused
CUDA, against burn's numpy backend unfused: each graph is called five times with other input values and
scalars each call (plan, replay, then a captured CUDA graph, ``burn_cuda._graphs``), every call checked,
then captured with ``burn.ir`` and replayed on CUDA. Derandomized, a fixed example budget
(``BURN_PROPERTY_EXAMPLES=N`` runs more)."""

from __future__ import annotations

from typing import Any

import pytest
from burn.testing._random_graphs import (
    RandomGraph,
    Step,
    assert_close,
    check_calls_and_replay,
    ci_settings,
    feeds,
    graphs,
    reference,
)
from hypothesis import given

pytestmark = pytest.mark.gpu

CALLS = 5


@ci_settings(150)
@given(graphs())
def test_random_graph_matches_numpy_on_fused_cuda(cuda: Any, graph: RandomGraph) -> None:
    check_calls_and_replay(graph, cuda, "cuda", CALLS)


def test_the_cuda_runs_reach_captured_graphs(cuda: Any) -> None:
    """The five calls per graph above reach a captured CUDA graph's launch, and each launch's outputs
    follow the call's inputs and scalars."""
    fb = cuda.backend
    graph = RandomGraph(
        [Step("transformer", (2, True, "gelu")), Step("scalar", ("mul", 2.0)), Step("linear", (5,))],
        [(3, 4, 8)],
        seed=3,
    )
    before = dict(fb.stats)
    for call in range(CALLS):
        graph.shift = 0.125 * call
        want = reference(graph, call)
        assert want is not None
        assert_close(graph(*feeds(graph, call, cuda)), want, f"call {call + 1}", graph)
    assert fb.stats["replays"] > before["replays"]
    assert fb.stats["graph_launches"] > before["graph_launches"], fb.runtime.capture_failures
