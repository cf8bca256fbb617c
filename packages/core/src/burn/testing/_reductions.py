"""Element-wise chains around reductions, for the fusion tests of every backend: each case is
``fn(x, c, held) -> tensor`` over X (6, 7) and C (6,) with its numpy reference ``want(x, c)``."""

from __future__ import annotations

from typing import Any

import numpy as np

_rng = np.random.default_rng(5)
X = _rng.standard_normal((6, 7)).astype(np.float32)
C = _rng.uniform(0.5, 2.0, 6).astype(np.float32)


def layer_norm_stats(x: Any, c: Any, held: dict[str, Any]) -> Any:
    m = x.mean(-1, keepdim=True)
    var = ((x - m) * (x - m)).mean(-1, keepdim=True)
    return (x - m) / (var + 1e-5).sqrt()


def log_sum_exp(x: Any, c: Any, held: dict[str, Any]) -> Any:
    mx = x.max(-1, keepdim=True)  # read before the reduction (x - mx) and after it (+ mx)
    return ((x - mx).exp().sum(-1, keepdim=True)).log() + mx


def dropped_dims(x: Any, c: Any, held: dict[str, Any]) -> Any:
    return (x.exp().sum(-1)).log() * c  # c: (6,), read only by the epilogue, result (6,)


def kept_reduction(x: Any, c: Any, held: dict[str, Any]) -> Any:
    var = (x * x).mean(-1, keepdim=True)
    held["var"] = var  # a tensor holds the reduced value: the kernel stores it too
    return (var + 1.0).sqrt() * 2.0


def _np_layer_norm(x: np.ndarray, c: np.ndarray) -> np.ndarray:
    m = x.mean(-1, keepdims=True)
    return (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5)


def _np_lse(x: np.ndarray, c: np.ndarray) -> np.ndarray:
    mx = x.max(-1, keepdims=True)
    return np.log(np.exp(x - mx).sum(-1, keepdims=True)) + mx


CASES: dict[str, tuple[Any, Any]] = {
    "layer_norm_stats": (layer_norm_stats, _np_layer_norm),
    "log_sum_exp": (log_sum_exp, _np_lse),
    "dropped_dims": (dropped_dims, lambda x, c: np.log(np.exp(x).sum(-1)) * c),
    "kept_reduction": (kept_reduction, lambda x, c: np.sqrt((x * x).mean(-1, keepdims=True) + 1) * 2),
}


# kernels the epilogue saves: the chain's result, which the case returns, is written by the reduce
# kernel instead of a kernel of its own; layer_norm_stats's chain is read by the next kernel, which
# would otherwise compute sqrt(var + eps) per element (so as many kernels, fewer ops)
SAVED = {"layer_norm_stats": 0, "log_sum_exp": 1, "dropped_dims": 1, "kept_reduction": 1}


def check_epilogue(dev: Any, raw_dev: Any, case: str, monkeypatch: Any) -> None:
    """Run ``case`` on fusion device ``dev`` with reduce epilogues off, then on: values equal numpy
    (and the unfused device ``raw_dev``), a held reduced value is stored right, and the epilogue
    saves the kernels ``SAVED`` says (counted by the fusion backend)."""
    import burn

    fn, want_fn = CASES[case]
    fb = dev.backend
    kernels = {}
    got: Any = None
    for epilogues in (False, True):
        with monkeypatch.context() as mp:
            for name in ("_programs", "_lengths"):
                mp.setattr(fb, name, type(getattr(fb, name))())
            if not epilogues:
                mp.setattr(fb, "_post_chain", lambda *a: [])
            held: dict[str, Any] = {}
            x, c = burn.tensor(X, device=dev), burn.tensor(C, device=dev)
            before = fb.stats["kernels"]
            got = fn(x, c, held).numpy()
            kernels[epilogues] = fb.stats["kernels"] - before
            np.testing.assert_allclose(got, want_fn(X, C), rtol=1e-5, atol=1e-5)
            if "var" in held:
                np.testing.assert_allclose(held["var"].numpy(), (X * X).mean(-1, keepdims=True), rtol=1e-6)
    plain = fn(burn.tensor(X, device=raw_dev), burn.tensor(C, device=raw_dev), {}).numpy()
    np.testing.assert_allclose(got, plain, rtol=1e-5, atol=1e-5)
    assert kernels[True] == kernels[False] - SAVED[case], (case, kernels)
