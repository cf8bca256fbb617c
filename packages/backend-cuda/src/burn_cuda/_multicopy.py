"""Many device-to-device copies as one kernel launch (the CUDA graphs' input refills, ``_graphs``).

A training step replayed as CUDA graphs copies every weight and optimizer moment the last launch wrote
into the buffers the next launch reads: dozens to hundreds of arrays. As separate ``cudaMemcpyAsync``
calls (or memcpy nodes of a graph) each costs a few microseconds of its own however small it is; one
kernel over a table of (source, destination, bytes) runs them all at memory bandwidth. The table is
cut into chunks of ``CHUNK`` bytes, one thread block each, copied 16 bytes at a time where source and
destination are 16-byte aligned (CuPy's allocations are), byte by byte otherwise and for a tail.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._rawkernels import compiled

CHUNK = 1 << 16  # bytes per thread block

_SOURCE = r"""
extern "C" __global__ void __launch_bounds__(256) burn_multi_copy(
    const unsigned long long* src, const unsigned long long* dst, const long long* nbytes,
    const int* block_pair, const long long* block_off) {
  const int pair = block_pair[blockIdx.x];
  const long long off = block_off[blockIdx.x];
  const long long len = min((long long)CHUNK, nbytes[pair] - off);
  const char* s = (const char*)src[pair] + off;
  char* d = (char*)dst[pair] + off;
  long long head = 0;
  if ((((unsigned long long)s | (unsigned long long)d) & 15) == 0) {
    head = len & ~15LL;
    const uint4* s4 = (const uint4*)s;
    uint4* d4 = (uint4*)d;
    for (long long i = threadIdx.x; i < (head >> 4); i += blockDim.x) d4[i] = s4[i];
  }
  for (long long i = head + threadIdx.x; i < len; i += blockDim.x) d[i] = s[i];
}
"""


class MultiCopy:
    """The copies ``dsts[i][...] = srcs[i]`` (same bytes, C-contiguous) as one kernel; the table is
    uploaded when built, so a launch (also under stream capture) issues nothing else."""

    def __init__(self, cp: Any, pairs: list[tuple[Any, Any]]) -> None:
        pairs = [(d, s) for d, s in pairs if d.nbytes]
        sizes = np.array([d.nbytes for d, _ in pairs], dtype=np.int64)
        counts = -(-sizes // CHUNK)
        self.blocks = int(counts.sum())
        self.nbytes = int(sizes.sum())
        if not self.blocks:
            return
        block_pair = np.repeat(np.arange(len(pairs), dtype=np.int32), counts)
        first = np.repeat(np.cumsum(counts) - counts, counts)
        block_off = (np.arange(self.blocks, dtype=np.int64) - first) * CHUNK
        self.tables = (
            cp.asarray(np.array([s.data.ptr for _, s in pairs], dtype=np.uint64)),
            cp.asarray(np.array([d.data.ptr for d, _ in pairs], dtype=np.uint64)),
            cp.asarray(sizes),
            cp.asarray(block_pair),
            cp.asarray(block_off),
        )
        self.kernel = compiled(("multi_copy", CHUNK), f"#define CHUNK {CHUNK}\n" + _SOURCE, "burn_multi_copy")

    def launch(self) -> None:
        """Issue the copies on the current stream."""
        if self.blocks:
            self.kernel((self.blocks,), (256,), self.tables)
