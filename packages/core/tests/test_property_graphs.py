"""Random op graphs (``burn.testing._random_graphs``) on burn's cpu device with the fusion decorator (its
reference runtime: plans, program replay, in-place reuse of dead inputs) and through ``burn.ir`` capture
and replay, against the numpy backend unfused. Each graph runs four times on the fused device with other
input values and scalars each time, so the replayed program must take both as arguments; every call's
outputs are checked. Derandomized, a fixed example budget (``BURN_PROPERTY_EXAMPLES=N`` runs more)."""

from __future__ import annotations

import os

import burn
from burn.testing._random_graphs import RandomGraph, assert_close, graphs, reference
from hypothesis import HealthCheck, assume, given, settings

EXAMPLES = int(os.environ.get("BURN_PROPERTY_EXAMPLES", "60"))
CALLS = 4
FUSED = burn.device("cpu", fusion=True)


@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    print_blob=True,
)
@given(graphs())
def test_random_graph_on_cpu_fusion_and_ir_replay(graph: RandomGraph) -> None:
    wants = []
    for call in range(CALLS):
        graph.shift = 0.125 * call
        want = reference(graph, call)
        assume(want is not None)
        wants.append(want)
        got = graph(*[burn.tensor(v, device=FUSED) for v in graph.inputs(call)])
        assert_close(got, want, f"cpu fused, call {call + 1}", graph)
    graph.shift, graph.reads = 0.0, False
    ir = burn.ir.capture(graph, [(v.shape, "float32") for v in graph.inputs(0)])
    graph.reads = True
    for k in (0, 1):  # the graph's constants and scalars are those of shift 0; inputs vary
        if k:
            graph.shift = 0.0
            want = reference(graph, k)
            assume(want is not None)
        else:
            want = wants[0]
        got = burn.ir.replay(ir, [burn.tensor(v, device=FUSED) for v in graph.inputs(k)])
        assert_close(got, want, f"burn.ir replay on cpu fused, inputs {k}", graph)
