"""CUDA C sources of burn-cuda's flash-style attention kernels (``_attention`` launches them).

Four kernels, each a block of 256 threads (16 x 16) over a tile of 64 query rows and 64 keys, the
tiles held in shared memory with rows padded by one float so that row-wise and column-wise reads
are both free of bank conflicts:

- ``fwd``: out and the row log-sum-exp, the keys walked in tiles with an online softmax (running max
  and sum per row, the partial output rescaled as the max grows); causal blocks stop at the diagonal.
- ``stats``: D = rowsum(dO * O) per query row (one warp per row).
- ``dq``: per query tile, the key tiles walked: P recomputed from lse, dS = P * (dP - D),
  dQ += dS K * scale.
- ``dkv``: per key tile, the query tiles walked: dV += Pᵀ dO, dK += dSᵀ Q * scale.

Nothing of size L x S is ever stored. q, k, v, out and the output gradient are read, and out and the
gradients written, through (batch, head, row) strides with unit column stride (the caller lays its
results out as its inputs are: a head-interleaved (batch, seq, head, dim) buffer seen as (batch, head,
seq, dim) stays so, and merging the heads back needs no copy); the mask (bool: attend where true; float: added to the scores) through four
strides, 0 where it broadcasts. float16 and bfloat16 are read and written as their bits and
computed in float32.
"""

from __future__ import annotations

from itertools import pairwise

from ._bf16 import PREAMBLE as BF16
from ._rawkernels import CVT

TILE = 64
THREADS = 256
MAX_HEAD = 128

# storage type, load expression of p[i], store expression of float v
_IO = {
    "float32": ("float", "p[i]", "v"),
    "float16": ("unsigned short", "burn_h2f(p[i])", "burn_f2h(v)"),
    "bfloat16": ("unsigned short", "burn_bf16_to_f(p[i])", "burn_f_to_bf16(v)"),
}
_MASK = {
    "bool": "unsigned char",
    "float32": "float",
    "float16": "unsigned short",
    "bfloat16": "unsigned short",
}


def _head(dtype: str, mask: str, e: int, ev: int) -> str:
    c, load, store = _IO[dtype]
    lines = [CVT, BF16, f"#define E {e}", f"#define EV {ev}", "#define EP (E + 1)", "#define EVP (EV + 1)"]
    lines += [f"#define CE {-(-e // 16)}", f"#define CV {-(-ev // 16)}", f"typedef {c} T;"]
    lines.append(f"__device__ __forceinline__ float ld(const T* p, long long i) {{ return {load}; }}")
    lines.append(f"__device__ __forceinline__ T st(float v) {{ return (T)({store}); }}")
    if mask in ("bool", "float32", "float16", "bfloat16"):
        mc = _MASK[mask]
        lines.append(f"typedef {mc} M;")
        if mask == "bool":
            lines.append("#define MASK_BOOL 1")
        else:
            mload = _IO[mask][1].replace("p[i]", "m[i]")
            lines.append(
                f"__device__ __forceinline__ float mld(const M* m, long long i) {{ return {mload}; }}"
            )
            lines.append("#define MASK_FLOAT 1")
    else:
        lines.append("typedef unsigned char M;")
        if mask == "causal":
            lines.append("#define CAUSAL 1")
    lines.append(_COMMON)
    return "\n".join(lines)


# the shared pieces: tile loads, the masked and scaled score of (i, j), warp reductions over 16 lanes
_COMMON = r"""
#define NEG_INF __int_as_float(0xff800000)
struct Mask { const M* p; long long b, r, c; };  // base offset of (batch, head), row and column strides

__device__ __forceinline__ void load_rows(float* dst, const T* src, long long rs, int r0, int n, int w,
                                          int pitch) {
  for (int idx = threadIdx.x; idx < 64 * w; idx += 256) {
    int r = idx / w, c = idx - r * w;
    dst[r * pitch + c] = (r0 + r < n) ? ld(src, (long long)(r0 + r) * rs + c) : 0.f;
  }
}

// the keys a query tile starting at i0 can see: all, or (causal) up to its last row
__device__ __forceinline__ int key_end(int S, int i0) {
#ifdef CAUSAL
  return min(S, i0 + 64);
#else
  return S;
#endif
}

// the key tile j0 .. j0 + 63 of k and v into Ks and Vs, between barriers
__device__ __forceinline__ void next_kv(float* Ks, float* Vs, const T* kp, long long kr, const T* vp,
                                        long long vr, int j0, int S) {
  __syncthreads();
  load_rows(Ks, kp, kr, j0, S, E, EP);
  load_rows(Vs, vp, vr, j0, S, EV, EVP);
  __syncthreads();
}

// the scaled score with the mask applied (NEG_INF where (i, j) may not attend)
__device__ __forceinline__ float score(float s, float scale, int i, int j, int L, int S, const Mask& m) {
  if (i >= L || j >= S) return NEG_INF;
  float x = s * scale;
#ifdef CAUSAL
  if (j > i) return NEG_INF;
#endif
#ifdef MASK_BOOL
  if (!m.p[m.b + i * m.r + j * m.c]) return NEG_INF;
#endif
#ifdef MASK_FLOAT
  x += mld(m.p, m.b + i * m.r + j * m.c);
#endif
  return x;
}

// s[r][c] = sum over e < n of A[row ty + 16 r][e] * B[row tx + 16 c][e] (rows of ``pitch`` floats)
__device__ __forceinline__ void tile_dot(float s[4][4], const float* A, const float* B, int n, int pitch,
                                         int tx, int ty) {
  for (int r = 0; r < 4; ++r) for (int c = 0; c < 4; ++c) s[r][c] = 0.f;
  for (int e = 0; e < n; ++e) {
    float a[4], b[4];
    for (int r = 0; r < 4; ++r) a[r] = A[(ty + 16 * r) * pitch + e];
    for (int c = 0; c < 4; ++c) b[c] = B[(tx + 16 * c) * pitch + e];
    for (int r = 0; r < 4; ++r) for (int c = 0; c < 4; ++c) s[r][c] = fmaf(a[r], b[c], s[r][c]);
  }
}

// acc[r][c] += sum over j < 64 of P[row ty + 16 r][j] * Y[j][tx + 16 c] (P rows of 65, Y rows of ``pitch``)
template <int NC>
__device__ __forceinline__ void tile_acc(float acc[4][NC], const float* P, const float* Y, int pitch, int tx,
                                         int ty) {
  for (int j = 0; j < 64; ++j) {
    float p[4];
    for (int r = 0; r < 4; ++r) p[r] = P[(ty + 16 * r) * 65 + j];
    for (int c = 0; c < NC; ++c) {
      const float w = Y[j * pitch + tx + 16 * c];
      for (int r = 0; r < 4; ++r) acc[r][c] = fmaf(p[r], w, acc[r][c]);
    }
  }
}

__device__ __forceinline__ float max16(float v) {
  for (int o = 8; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float sum16(float v) {
  for (int o = 8; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
"""

# each tiled kernel's dynamic shared memory, in order: (buffer, floats per row of its 64 rows; "1": one
# float per row). The kernels' pointers and ``shared_bytes`` both follow it.
_SHARED = {
    "fwd": (("Qs", "EP"), ("Ks", "EP"), ("Vs", "EVP"), ("Ps", "65")),
    "dq": (("Qs", "EP"), ("Gs", "EVP"), ("Ks", "EP"), ("Vs", "EVP"), ("Ds", "65")),
    "dkv": (
        ("Ks", "EP"),
        ("Vs", "EVP"),
        ("Qs", "EP"),
        ("Gs", "EVP"),
        ("Ps", "65"),
        ("Ds", "65"),
        ("Ls", "1"),
        ("Dd", "1"),
    ),
}

# the strides of q, k and v (batch, head, row) and of the mask (batch, head, row, column), in the
# signature of every tiled kernel
_QKVM_STRIDES = (
    "    long long qb, long long qh, long long qr, long long kb, long long kh, long long kr,\n"
    "    long long vb, long long vh, long long vr, long long mb, long long mh, long long mr, long long mc,\n"
)
# what both gradient kernels read first (their outputs follow)
_GRAD_INPUTS = (
    "const T* q, const T* k, const T* v, const M* mp, const T* g, const float* lse, const float* dd,\n    "
)


def _tile_kernel(kind: str, args: str, strides: str, tile: str) -> str:
    """The start of tiled kernel ``burn_attn_{kind}``: its signature (``args``, the q/k/v/mask strides,
    then the outputs' ``strides``), the shared memory cut as ``_SHARED[kind]``, the thread's place in
    the 16 x 16 block, the block's (batch, head) and first row (``tile``: i0 for a query tile, j0 for
    a key tile), and the mask seen from that (batch, head)."""
    layout = _SHARED[kind]
    pointers = f"  float* {layout[0][0]} = sm;\n"
    for (prev, width), (name, _) in pairwise(layout):
        pointers += f"  float* {name} = {prev} + 64{'' if width == '1' else ' * ' + width};\n"
    return (
        f'\nextern "C" __global__ void __launch_bounds__(256) burn_attn_{kind}(\n'
        f"    {args}\n{_QKVM_STRIDES}    {strides}) {{\n"
        "  extern __shared__ float sm[];\n"
        f"{pointers}"
        "  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;\n"
        f"  const int bh = blockIdx.y, bi = bh / H, hi = bh - bi * H, {tile} = blockIdx.x * 64;\n"
        "  Mask m = {mp, bi * mb + hi * mh, mr, mc};\n"
    )


def _row_stats(indent: int, lse_to: str, d_to: str) -> str:
    """Query row i's log-sum-exp into ``lse_to`` (-inf, a row that attends nothing, read as 0: its
    scores are -inf, so P stays 0 instead of NaN) and its D into ``d_to``; 0 past the last row."""
    pad = " " * indent
    return (
        f"{pad}const float x = i < L ? lse[(long long)bh * L + i] : 0.f;\n"
        f"{pad}{lse_to} = isinf(x) ? 0.f : x;\n"
        f"{pad}{d_to} = i < L ? dd[(long long)bh * L + i] : 0.f;\n"
    )


def _store_cols(dim: str, dst: str, value: str) -> str:
    """A thread's columns of one output row: ``dst`` (``col`` its column) = ``value`` (``c`` the
    thread's column slot), over the q/k head dim (``dim`` "E") or v's ("V")."""
    slots, width = ("CE", "E") if dim == "E" else ("CV", "EV")
    return (
        f"    for (int c = 0; c < {slots}; ++c) {{\n"
        "      const int col = tx + 16 * c;\n"
        f"      if (col < {width}) {dst} = st({value});\n"
        "    }\n"
    )


_FWD = (
    _tile_kernel(
        "fwd",
        "const T* q, const T* k, const T* v, const M* mp, T* out, float* lse, int H, int L, int S, float scale,",
        "long long ob, long long oh, long long orow",
        "i0",
    )
    + r"""  load_rows(Qs, q + bi * qb + hi * qh, qr, i0, L, E, EP);
  const T* kp = k + bi * kb + hi * kh;
  const T* vp = v + bi * vb + hi * vh;
  float mx[4], l[4], o[4][CV];
  for (int r = 0; r < 4; ++r) {
    mx[r] = NEG_INF; l[r] = 0.f;
    for (int c = 0; c < CV; ++c) o[r][c] = 0.f;
  }
  for (int j0 = 0; j0 < key_end(S, i0); j0 += 64) {
    next_kv(Ks, Vs, kp, kr, vp, vr, j0, S);
    float s[4][4];
    tile_dot(s, Qs, Ks, E, EP, tx, ty);
    for (int r = 0; r < 4; ++r) {
      const int i = i0 + ty + 16 * r;
      float best = NEG_INF;
      for (int c = 0; c < 4; ++c) {
        s[r][c] = score(s[r][c], scale, i, j0 + tx + 16 * c, L, S, m);
        best = fmaxf(best, s[r][c]);
      }
      const float mnew = fmaxf(mx[r], max16(best));
      const float base = mnew == NEG_INF ? 0.f : mnew;  // a row with nothing to attend yet: exp(-inf) = 0
      const float alpha = expf(mx[r] - base);
      float sum = 0.f;
      for (int c = 0; c < 4; ++c) {
        const float p = expf(s[r][c] - base);
        Ps[(ty + 16 * r) * 65 + tx + 16 * c] = p;
        sum += p;
      }
      l[r] = l[r] * alpha + sum16(sum);
      mx[r] = mnew;
      for (int c = 0; c < CV; ++c) o[r][c] *= alpha;
    }
    __syncthreads();
    tile_acc<CV>(o, Ps, Vs, EVP, tx, ty);
  }
  for (int r = 0; r < 4; ++r) {
    const int i = i0 + ty + 16 * r;
    if (i >= L) continue;
    const float inv = l[r] > 0.f ? 1.f / l[r] : 0.f;
    const long long at = bi * ob + hi * oh + i * orow;
"""
    + _store_cols("V", "out[at + col]", "o[r][c] * inv")
    + r"""    if (tx == 0) lse[(long long)bh * L + i] = l[r] > 0.f ? mx[r] + logf(l[r]) : NEG_INF;
  }
}
"""
)

_STATS = r"""
extern "C" __global__ void __launch_bounds__(256) burn_attn_stats(
    const T* o, const T* g, float* d, long long rows, int H, int L, long long ob, long long oh, long long orow,
    long long gb, long long gh, long long gr) {
  const long long row = (long long)blockIdx.x * 8 + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  const long long bh = row / L, i = row - bh * L, bi = bh / H, hi = bh - bi * H;
  const T* op = o + bi * ob + hi * oh + i * orow;
  const T* gp = g + bi * gb + hi * gh + i * gr;
  float acc = 0.f;
  for (int c = lane; c < EV; c += 32) acc = fmaf(ld(op, c), ld(gp, c), acc);
  for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
  if (lane == 0) d[row] = acc;
}
"""

_DQ = (
    _tile_kernel(
        "dq",
        _GRAD_INPUTS + "T* dq, int H, int L, int S, float scale,",
        "long long gb, long long gh, long long gr, long long db, long long dh, long long dr",
        "i0",
    )
    + r"""  load_rows(Qs, q + bi * qb + hi * qh, qr, i0, L, E, EP);
  load_rows(Gs, g + bi * gb + hi * gh, gr, i0, L, EV, EVP);
  const T* kp = k + bi * kb + hi * kh;
  const T* vp = v + bi * vb + hi * vh;
  float row_lse[4], row_d[4], acc[4][CE];
  for (int r = 0; r < 4; ++r) {
    const int i = i0 + ty + 16 * r;
"""
    + _row_stats(4, "row_lse[r]", "row_d[r]")
    + r"""    for (int c = 0; c < CE; ++c) acc[r][c] = 0.f;
  }
  for (int j0 = 0; j0 < key_end(S, i0); j0 += 64) {
    next_kv(Ks, Vs, kp, kr, vp, vr, j0, S);
    float s[4][4], dp[4][4];
    tile_dot(s, Qs, Ks, E, EP, tx, ty);
    tile_dot(dp, Gs, Vs, EV, EVP, tx, ty);
    for (int r = 0; r < 4; ++r) {
      const int i = i0 + ty + 16 * r;
      for (int c = 0; c < 4; ++c) {
        const float p = expf(score(s[r][c], scale, i, j0 + tx + 16 * c, L, S, m) - row_lse[r]);
        Ds[(ty + 16 * r) * 65 + tx + 16 * c] = p * (dp[r][c] - row_d[r]);
      }
    }
    __syncthreads();
    tile_acc<CE>(acc, Ds, Ks, EP, tx, ty);
  }
  for (int r = 0; r < 4; ++r) {
    const int i = i0 + ty + 16 * r;
    if (i >= L) continue;
"""
    + _store_cols("E", "dq[bi * db + hi * dh + i * dr + col]", "acc[r][c] * scale")
    + r"""  }
}
"""
)

_DKV = (
    _tile_kernel(
        "dkv",
        _GRAD_INPUTS + "T* dk, T* dv, int H, int L, int S, float scale,",
        "long long gb, long long gh, long long gr, long long kgb, long long kgh, long long kgr,\n"
        "    long long vgb, long long vgh, long long vgr",
        "j0",
    )
    + r"""  load_rows(Ks, k + bi * kb + hi * kh, kr, j0, S, E, EP);
  load_rows(Vs, v + bi * vb + hi * vh, vr, j0, S, EV, EVP);
  const T* qp = q + bi * qb + hi * qh;
  const T* gp = g + bi * gb + hi * gh;
  float ak[4][CE], av[4][CV];
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < CE; ++c) ak[r][c] = 0.f;
    for (int c = 0; c < CV; ++c) av[r][c] = 0.f;
  }
  int istart = 0;
#ifdef CAUSAL
  istart = j0;  // queries before the tile's first key see none of it
#endif
  for (int i0 = istart; i0 < L; i0 += 64) {
    __syncthreads();
    load_rows(Qs, qp, qr, i0, L, E, EP);
    load_rows(Gs, gp, gr, i0, L, EV, EVP);
    if (threadIdx.x < 64) {
      const int i = i0 + threadIdx.x;
"""
    + _row_stats(6, "Ls[threadIdx.x]", "Dd[threadIdx.x]")
    + r"""    }
    __syncthreads();
    float s[4][4], dp[4][4];
    tile_dot(s, Ks, Qs, E, EP, tx, ty);
    tile_dot(dp, Vs, Gs, EV, EVP, tx, ty);
    for (int r = 0; r < 4; ++r) {
      const int j = j0 + ty + 16 * r;
      for (int c = 0; c < 4; ++c) {
        const int ii = tx + 16 * c;
        const float p = expf(score(s[r][c], scale, i0 + ii, j, L, S, m) - Ls[ii]);
        Ps[(ty + 16 * r) * 65 + ii] = p;
        Ds[(ty + 16 * r) * 65 + ii] = p * (dp[r][c] - Dd[ii]);
      }
    }
    __syncthreads();
    tile_acc<CV>(av, Ps, Gs, EVP, tx, ty);
    tile_acc<CE>(ak, Ds, Qs, EP, tx, ty);
  }
  for (int r = 0; r < 4; ++r) {
    const int j = j0 + ty + 16 * r;
    if (j >= S) continue;
    const long long katt = bi * kgb + hi * kgh + j * kgr, vatt = bi * vgb + hi * vgh + j * vgr;
"""
    + _store_cols("E", "dk[katt + col]", "ak[r][c] * scale")
    + _store_cols("V", "dv[vatt + col]", "av[r][c]")
    + r"""  }
}
"""
)

_BODIES = {"fwd": _FWD, "stats": _STATS, "dq": _DQ, "dkv": _DKV}


def source(kind: str, dtype: str, mask: str, e: int, ev: int) -> str:
    """The CUDA C of kernel ``kind`` ("fwd", "stats", "dq", "dkv") for q/k/v of ``dtype`` (a numpy
    name: float32, float16, bfloat16), mask kind ``mask`` ("none", "causal", "bool" or the float
    mask's dtype name) and head dims ``e`` (q, k) and ``ev`` (v)."""
    return _head(dtype, mask, e, ev) + _BODIES[kind]


def shared_bytes(kind: str, e: int, ev: int) -> int:
    """Dynamic shared memory of kernel ``kind`` in bytes."""
    width = {"EP": e + 1, "EVP": ev + 1, "65": TILE + 1, "1": 1}
    return 4 * sum(TILE * width[w] for _, w in _SHARED.get(kind, ()))
