"""WGSL rewrites that keep a kernel's meaning but let browsers' shader compilers accept it.

Browsers validate WGSL more strictly than naga (wgpu-py): Chromium's Tint evaluates
``bitcast<f32>(0x7fc00000u)`` as a constant expression and rejects it (``value nan cannot be
represented as 'f32'``), and the same for infinities, while naga accepts both. A NaN/Inf bit pattern
read through a module-scope ``var<private>`` is a run-time value: same bits, no constant folding.

One row per rewrite (pattern, function of the match and the collected declarations).
"""

from __future__ import annotations

import re

_SPECIAL_F32 = re.compile(r"bitcast<f32>\(0x([0-9a-fA-F]{1,8})u\)")


def _special_f32(source: str) -> str:
    decls: dict[str, str] = {}

    def repl(m: re.Match[str]) -> str:
        bits = int(m.group(1), 16)
        if bits & 0x7F800000 != 0x7F800000:  # finite: constant folding is fine
            return m.group(0)
        name = f"burn_f32_bits_{bits:08x}"
        decls[name] = f"var<private> {name}: u32 = 0x{bits:08x}u;"
        return f"bitcast<f32>({name})"

    body = _SPECIAL_F32.sub(repl, source)
    if not decls:
        return source
    return "\n".join(decls.values()) + "\n" + body


REWRITES = (_special_f32,)


def portable_wgsl(source: str) -> str:
    """``source`` with every rewrite of ``REWRITES`` applied (a no-op on sources that need none)."""
    for rewrite in REWRITES:
        source = rewrite(source)
    return source
