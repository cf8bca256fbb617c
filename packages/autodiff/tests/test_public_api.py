"""The public face of burn_autodiff: a snapshot of ``__all__`` and the backend surface burn relies on."""

from __future__ import annotations

import burn
import burn_autodiff
import numpy as np
from burn.backend import Backend

EXPECTED_ALL = [
    "ADPrim",
    "Autodiff",
    "CHECKPOINTING",
    "Ctx",
    "GradcheckReport",
    "GraphFreedError",
    "Node",
    "RULES",
    "Rule",
    "__version__",
    "gradcheck",
    "graph_rules",
    "leaf_gradients",
]


def test_all_snapshot():
    assert sorted(burn_autodiff.__all__) == sorted(EXPECTED_ALL)
    for name in burn_autodiff.__all__:
        assert hasattr(burn_autodiff, name), name


def test_autodiff_implements_the_whole_backend_contract():
    assert burn_autodiff.Autodiff.missing_core() == []
    surface = [
        "inner_prim",
        "require_grad",
        "is_require_grad",
        "backward",
        "grad",
        "detach",
        "node_id",
        "from_inner",
    ]
    b = burn.device("cpu", autodiff=True).backend
    for name in surface:
        assert callable(getattr(b, name)), name
    # every backend op is either overridden or a private helper composed from overridden ops
    inherited = [
        n
        for n in dir(Backend)
        if not n.startswith("__")
        and callable(getattr(Backend, n))
        and getattr(type(b), n) is getattr(Backend, n)
    ]
    assert all(n.startswith("_") for n in inherited), inherited


def test_seed_dtype_follows_the_output():
    dev = burn.device("cpu", autodiff=True)
    x = burn.tensor(np.array([1.0, 2.0]), dtype=burn.float64, device=dev).require_grad()
    grads = (x * x).backward(burn.tensor([1.0, 1.0], dtype=burn.float32, device=dev))
    g = x.grad(grads)
    assert g.dtype == burn.float64
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0])


def test_rule_table_keys_follow_the_backend_op_tables():
    from burn.backend import BINARY_OPS, REDUCE_OPS, UNARY_OPS

    for key in burn_autodiff.RULES:
        group, _, op = key.partition(":")
        table = {"unary": UNARY_OPS, "binary": BINARY_OPS, "reduce": REDUCE_OPS}.get(group)
        if table is not None:
            assert op in table, key
