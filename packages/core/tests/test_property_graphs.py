"""Random op graphs (``burn.testing._random_graphs``) on burn's cpu device with the fusion decorator (its
reference runtime: plans, program replay, in-place reuse of dead inputs) and through ``burn.ir`` capture
and replay, against the numpy backend unfused. Each graph runs four times on the fused device with other
input values and scalars each time, so the replayed program must take both as arguments; every call's
outputs are checked. Derandomized, a fixed example budget (``BURN_PROPERTY_EXAMPLES=N`` runs more)."""

from __future__ import annotations

import burn
from burn.testing._random_graphs import (
    RandomGraph,
    Step,
    check_calls_and_replay,
    ci_settings,
    fixed_graph_calls,
    graphs,
)
from hypothesis import given

CALLS = 4
FUSED = burn.device("cpu", fusion=True)


@ci_settings(150)
@given(graphs())
def test_random_graph_on_cpu_fusion_and_ir_replay(graph: RandomGraph) -> None:
    check_calls_and_replay(graph, FUSED, "cpu", CALLS)


def test_the_repeated_calls_replay_planned_programs() -> None:
    """The repeated calls above replay the program planned by the first, with each call's inputs and
    scalars: a fixed graph of the same kind, run the same way."""
    steps = [
        Step("transformer", (2, False, "gelu")),
        Step("scalar", ("mul", 2.0)),
        Step("reduce", ("sum", -1, True)),
    ]
    grew = fixed_graph_calls(FUSED, steps, CALLS, "cpu fused")
    assert grew["replays"] >= CALLS - 1
