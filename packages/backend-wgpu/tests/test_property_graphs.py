"""Random op graphs (``burn.testing._random_graphs``: element-wise chains with broadcasting, reductions,
linear and batched matmuls, softmax, layer norm, shape ops, residuals, reads mid-stream, MLP and
transformer blocks repeated with shared or separate weights) through every path on wgpu that runs a
graph other than op by op, against burn's numpy backend unfused (the reference):

- ``wgpu`` fused (generated kernels), called five times with other input values and scalars each
  call: the first call plans, later ones replay the planned program, and after a few replays the
  program is captured and launched as a recorded wgpu command list (``burn_wgpu._graphs``); every
  call's outputs are checked;
- ``burn.ir``: the graph captured symbolically and replayed on fused wgpu, twice with other inputs;
- the web export (``burn_wgpu.web.export``, fused), its schedule run by ``NativeSchedule`` as a page
  runs it, on the export's example inputs and on other ones.

The cpu fusion decorator runs the same graphs in packages/core/tests/test_property_graphs.py. The example
budget is fixed and derandomized so CI runs the same graphs every time (about a minute on two CPU cores
with lavapipe); ``BURN_PROPERTY_EXAMPLES=N`` runs more. Tolerances: ``_random_graphs.RTOL``/``ATOL``.
"""

from __future__ import annotations

import tempfile
from typing import Any

from burn.testing._random_graphs import (
    RandomGraph,
    Step,
    assert_close,
    check_calls_and_replay,
    ci_settings,
    fixed_graph_calls,
    graphs,
    reference,
)
from hypothesis import given

CALLS = 5  # plan, replay, then capture and launch the recorded command list


@ci_settings(80)
@given(graphs())
def test_random_graph_matches_numpy_on_every_path(dev: Any, graph: RandomGraph) -> None:
    import burn_wgpu.web as web

    check_calls_and_replay(graph, dev, "wgpu", CALLS)
    # exported at shift 0: the constants and scalars are fixed, the inputs vary
    graph.shift = 0.0
    wants = [reference(graph, k) for k in (0, 1)]
    graph.reads = False
    try:
        with tempfile.TemporaryDirectory() as out:
            exported = web.export(graph, list(graph.inputs(0)), out)
            schedule = web.NativeSchedule(out)
            in_names = [i.name for i in exported.inputs]
            out_names = [o.name for o in exported.outputs]
            for k, want in enumerate(wants):
                assert want is not None
                got = schedule.run(dict(zip(in_names, graph.inputs(k))))
                assert_close([got[n] for n in out_names], want, f"web export schedule, inputs {k}", graph)
    finally:
        graph.reads = True


def test_the_wgpu_runs_reach_recorded_command_lists(dev: Any) -> None:
    """The five calls per graph above reach the recorded-command-list launch (not only planning and
    step-by-step replay): a fixed graph of the same kind, run the same way, is captured and launched,
    and each launch's outputs follow the call's inputs and scalars."""
    steps = [Step("transformer", (2, True, "gelu")), Step("scalar", ("mul", 2.0)), Step("linear", (5,))]
    grew = fixed_graph_calls(dev, steps, CALLS, "wgpu fused")
    assert grew["replays"] > 0
    assert grew["graph_launches"] > 0, dev.backend.runtime.capture_failures
