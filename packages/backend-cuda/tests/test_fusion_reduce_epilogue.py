"""Reduce epilogues on burn-cuda (``reduce_source``): the chain reading a reduction's result runs in
the reduce kernel's thread 0 and is stored there; values equal the unfused kernels and numpy, and the
kernels saved are the ones the reference runtime saves (``burn.testing._reductions``)."""

from __future__ import annotations

import burn
import pytest
from burn.testing._reductions import CASES, check_epilogue

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_chain_after_a_reduction_runs_in_its_kernel(cuda, case, monkeypatch):
    check_epilogue(burn.device("cuda:0"), burn.device("cuda:0", fusion=False), case, monkeypatch)
