"""Reduce epilogues on wgpu (``render_reduce``): the chain reading a reduction's result runs in the
reduce kernel's invocation 0 and is stored there; values equal the unfused kernels and numpy, and the
kernels saved are the ones the reference runtime saves (``burn.testing._reductions``)."""

from __future__ import annotations

import pytest
from burn.testing._reductions import CASES, check_epilogue


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_chain_after_a_reduction_runs_in_its_kernel(dev, raw_dev, case, monkeypatch):
    check_epilogue(dev, raw_dev, case, monkeypatch)
