"""C text that several compiled-kernel families share (``_ops_conv``, ``_ops_conv_grad``, ``_ops_pool``,
``_ops_rows``): each piece is written once here and spliced into the families' templates, so a fix to
the window arithmetic reaches every kernel that walks a window row.

The pieces expand to plain C (no macros): what the compiler sees is the loop as if written out by hand,
so it vectorises the same way. ``indent`` is the number of spaces in front of each emitted line.
"""

from __future__ import annotations

# a 2-d conv kernel's parameters (``_ops.params`` order): sizes, kernel, output, stride, padding,
# dilation, groups
CONV_PARAMS = (
    "  const int64_t N = p[0], C = p[1], H = p[2], W = p[3], CO = p[4], KH = p[5], KW = p[6];\n"
    "  const int64_t OH = p[7], OW = p[8], SH = p[9], SW = p[10], PH = p[11], PW = p[12];\n"
    "  const int64_t DH = p[13], DW = p[14], G = p[15];\n"
)


def valid_range(indent: int, n_in: str, n_out: str) -> str:
    """``lo`` and ``hi``: the indices ``i`` in [lo, hi) of a strided row, at most ``n_out``, whose
    partner ``i * SW + off`` lies in [0, ``n_in``) (outside it: padding, skipped)."""
    pad = " " * indent
    return (
        f"{pad}int64_t lo = off < 0 ? (-off + SW - 1) / SW : 0;\n"
        f"{pad}int64_t hi = {n_in} - 1 - off < 0 ? 0 : ({n_in} - 1 - off) / SW + 1;\n"
        f"{pad}if (hi > {n_out}) hi = {n_out};\n"
    )


def strided_loop(indent: int, var: str, body: str, pragma: str = "") -> str:
    """``for (var = lo; var < hi; var++) body`` split on ``SW``: ``@`` in ``body`` (one statement or
    several lines) stands for the strided index, ``var + off`` at unit stride (under ``pragma``, an
    ``omp simd`` clause: dense, so it vectorises) and ``var * SW + off`` otherwise."""
    pad = " " * indent
    loop = f"for (int64_t {var} = lo; {var} < hi; {var}++)"

    def one(index: str) -> str:
        text = body.replace("@", index)
        if "\n" not in text:
            return f"{pad}  {loop} {text}\n"
        inner = "".join(f"{pad}    {line}\n" for line in text.splitlines())
        return f"{pad}  {loop} {{\n{inner}{pad}  }}\n"

    head = f"{pad}  #pragma {pragma}\n" if pragma else ""
    return (
        f"{pad}if (SW == 1) {{\n{head}{one(f'{var} + off')}"
        f"{pad}}} else {{\n{one(f'{var} * SW + off')}{pad}}}\n"
    )
