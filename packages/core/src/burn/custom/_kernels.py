"""Source kernels of a custom op, declared the way burn's own kernels are launched.

``Wgsl``: a WGSL compute shader for burn-wgpu. As every burn-wgpu kernel: entry point ``main``; binding 0
is ``info: array<u32>`` (the launch's parameter words, ``params``), binding 1 the output
(``read_write``), bindings 2.. the inputs in call order (``read``), all dense row-major from element 0;
``grid`` gives the workgroup counts.

``Cuda``: a ``__global__`` function of CUDA C for burn-cuda, compiled once with ``cupy.RawKernel`` and
launched on the device's stream as burn-cuda's own kernels are: arguments are the inputs in call
order, then the output (dense row-major device pointers), then the ``params`` values; ``grid`` gives
the blocks, ``block`` the threads per block.

Both read what they need of a call from a ``Launch``: the inputs' and output's shapes and dtypes, the
op's attributes, the output's element count.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._dtype import DType

Ints = tuple[int, ...]
Params = Callable[["Launch"], Sequence[int | float]]
Grid = Callable[["Launch"], tuple[int, ...]]

MAX_GRID = 65535  # workgroups (WebGPU's default limit) or blocks along y and z per launch


@dataclass(frozen=True)
class Launch:
    """One call of a custom op as its kernel's ``params`` and ``grid`` functions see it: the inputs'
    ``shapes`` and ``dtypes``, the output's ``shape`` and ``dtype``, the call's ``attrs``.

    >>> c = Launch(((4, 3), (3, 5)), (burn.float32, burn.float32), (4, 5), burn.float32, {"alpha": 0.5})
    >>> c.numel, c.attrs["alpha"]
    (20, 0.5)
    """

    shapes: tuple[Ints, ...]
    dtypes: tuple[DType, ...]
    shape: Ints
    dtype: DType
    attrs: Mapping[str, Any]
    op: str = ""  # the custom op's name (kernel labels)

    @property
    def numel(self) -> int:
        """The output's element count."""
        n = 1
        for s in self.shape:
            n *= s
        return n


def spread(groups: int) -> tuple[int, int, int]:
    """``groups`` workgroups (or blocks) as a grid of at most 65535 along x, the rest along y, as burn's
    element-wise launches do: a kernel numbers its invocation ``gid.x + gid.y * nwg.x * size``.

    >>> spread(10), spread(70000)
    ((10, 1, 1), (65535, 2, 1))
    """
    groups = max(1, groups)
    x = min(groups, MAX_GRID)
    return x, -(-groups // x), 1


@dataclass(frozen=True)
class Wgsl:
    """A WGSL kernel of a custom op for burn-wgpu (the module docstring gives its bindings).

    ``params(launch)``: the u32 words of binding 0 (a float is stored as its f32 bits: read it with
    ``bitcast<f32>(info[k])``; a negative int as its two's complement: ``bitcast<i32>``); default: the
    output's element count. ``grid(launch)``: workgroup counts; default: one invocation per output
    element with ``@workgroup_size(workgroup_size)``, spread over x and y past 65535 workgroups
    (``spread``). ``name``: the variant's label (autotuning reports it). ``dtypes``: the input dtypes
    it is written for (None: any); a call of others runs the op's fallbacks.

    >>> k = Wgsl("@compute @workgroup_size(64) fn main() {}")
    >>> k.launch_grid(Launch(((100,),), (burn.float32,), (100,), burn.float32, {}))
    (2, 1, 1)
    """

    source: str
    params: Params | None = None
    grid: Grid | None = None
    workgroup_size: int = 64
    name: str = ""
    dtypes: tuple[DType, ...] | None = None

    def applies(self, launch: Launch) -> bool:
        """Whether this kernel takes the call's input dtypes (``dtypes``: None takes any)."""
        return self.dtypes is None or all(d in self.dtypes for d in launch.dtypes)

    def words(self, launch: Launch) -> tuple[int | float, ...]:
        """The parameter words of ``launch`` (``params``, or the output's element count)."""
        return tuple(self.params(launch)) if self.params is not None else (launch.numel,)

    def launch_grid(self, launch: Launch) -> tuple[int, int, int]:
        """The workgroup counts of ``launch`` (``grid``, or one invocation per output element)."""
        if self.grid is not None:
            return _three(self.grid(launch))
        return spread(-(-launch.numel // self.workgroup_size))


@dataclass(frozen=True)
class Cuda:
    """A CUDA C kernel of a custom op for burn-cuda (the module docstring gives its arguments).

    ``entry``: the ``extern "C" __global__`` function's name. ``params(launch)``: the scalar arguments
    after the output pointer: a Python int is passed as ``int`` (32-bit), a float as ``float``; pass a
    numpy scalar (``np.int64(n)``) for another C type. Default: the output's element count as ``int``.
    ``grid(launch)``: block counts; default: one thread per output element, ``block[0]`` threads a
    block, spread over x and y past 65535 blocks (``spread``). ``name``: the variant's label.
    ``dtypes``: the input dtypes it is written for (None: any); a call of others runs the fallbacks.

    >>> k = Cuda('extern "C" __global__ void f(float* y, int n) {}', "f")
    >>> k.launch_grid(Launch(((1000,),), (burn.float32,), (1000,), burn.float32, {}))
    (4, 1, 1)
    """

    source: str
    entry: str
    params: Params | None = None
    grid: Grid | None = None
    block: tuple[int, int, int] = (256, 1, 1)
    name: str = ""
    dtypes: tuple[DType, ...] | None = None

    def applies(self, launch: Launch) -> bool:
        """Whether this kernel takes the call's input dtypes (``dtypes``: None takes any)."""
        return self.dtypes is None or all(d in self.dtypes for d in launch.dtypes)

    def words(self, launch: Launch) -> tuple[int | float, ...]:
        """The scalar arguments of ``launch`` (``params``, or the output's element count)."""
        return tuple(self.params(launch)) if self.params is not None else (launch.numel,)

    def launch_grid(self, launch: Launch) -> tuple[int, int, int]:
        """The block counts of ``launch`` (``grid``, or one thread per output element)."""
        if self.grid is not None:
            return _three(self.grid(launch))
        return spread(-(-launch.numel // self.block[0]))


SourceKernel = Wgsl | Cuda


def _three(grid: tuple[int, ...]) -> tuple[int, int, int]:
    dims = tuple(int(g) for g in grid)
    if not 1 <= len(dims) <= 3 or any(g < 0 for g in dims):
        raise ValueError(f"a kernel's grid must be 1 to 3 non-negative counts, got {grid!r}")
    return (*dims, *(1,) * (3 - len(dims)))  # type: ignore[return-value]  # padded to three
