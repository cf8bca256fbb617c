"""Every generated kernel, by a stable name: each row of the element-wise expression table for each
dtype class it defines, every cast, and the reduce, matmul, index, sort, scan, pool and attention
families."""

from __future__ import annotations

import burn
from burn_wgpu._kernels import attention as KA
from burn_wgpu._kernels import conv as KC
from burn_wgpu._kernels import elementwise as EW
from burn_wgpu._kernels import index as KI
from burn_wgpu._kernels import matmul as KM
from burn_wgpu._kernels import matmul_pairs as KMP
from burn_wgpu._kernels import pool as KP
from burn_wgpu._kernels import quant as KQ
from burn_wgpu._kernels import reduce as KR
from burn_wgpu._kernels import scan as KS
from burn_wgpu._kernels import sort as KSORT

_BY_CLASS = {"f": burn.float32, "i": burn.int32, "u": burn.uint32, "b": burn.bool}
DTYPES = (burn.float32, burn.float16, burn.int32, burn.uint32, burn.bool)


def catalog() -> dict[str, str]:
    out: dict[str, str] = {}
    tables = (("unary", EW.UNARY, 1), ("binary", EW.BINARY, 2), ("ternary", EW.TERNARY, 3))
    for kind, table, arity in tables:
        for op in sorted(table):
            for cls, dt in _BY_CLASS.items():
                if EW.lookup(table, op, cls) is None:
                    continue
                expr, is_bool = EW.expression(kind, op, dt)
                out_dt = burn.bool if is_bool else dt
                operands = [(dt, True)] * arity
                if op == "where":
                    operands[0] = (burn.bool, True)
                if kind == "binary":
                    operands[1] = (dt, False)  # a scalar rhs: exercises the metadata load
                out[f"{kind}/{op}/{dt.name}"] = EW.render(
                    expr, is_bool, out_dt, tuple(operands), 2, False
                ).source
    for src in DTYPES:
        for dst in DTYPES:
            expr, _ = EW.expression("cast", "cast", src, dst)
            out[f"cast/{src.name}->{dst.name}"] = EW.render(expr, False, dst, ((src, True),), 1, True).source
    for op in sorted(KR.REDUCE):
        for dt in (burn.float32, burn.float16, burn.int32, burn.uint32, burn.bool):
            if op in ("all", "any") and dt is not burn.bool:
                continue
            for per_thread in (True, False):
                out[f"reduce/{op}/{dt.name}/{'thread' if per_thread else 'tree'}"] = KR.render(
                    op, dt, dt, per_thread
                ).source
    for wg in KR.TREE_SIZES:  # the tuned reduction family's workgroup sizes
        if wg != KR.WG:
            out[f"reduce/sum/float32/tree{wg}"] = KR.render(
                "sum", burn.float32, burn.float32, False, wg
            ).source
    for op in ("argmax", "argmin"):
        for dt in (burn.float32, burn.int32):
            for per_thread in (True, False):
                out[f"{op}/{dt.name}/{'thread' if per_thread else 'tree'}"] = KR.render_arg(
                    op, dt, per_thread
                ).source
    for dt in (burn.float32, burn.float16, burn.int32):
        out[f"matmul/{dt.name}/1b"] = KM.render(dt, 1).source
        out[f"matmul_small/{dt.name}/1b"] = KM.render_small(dt, 1).source
        out[f"gather/{dt.name}"] = KI.render_gather(dt, burn.int32, 3, 1).source
        out[f"sort_init/{dt.name}"] = KSORT.render_init(dt).source
        for desc in (False, True):
            out[f"sort_stage/{dt.name}/{'desc' if desc else 'asc'}"] = KSORT.render_stage(dt, desc).source
        for op in ("cumsum", "cumprod"):
            out[f"{op}/{dt.name}"] = KS.render(op, dt).source
    for kind, op, dt, operands in (  # the vec4 element-wise path: tensor and scalar operands, bool out
        ("binary", "add", burn.float32, ((burn.float32, True), (burn.float32, True))),
        ("binary", "lt", burn.float32, ((burn.float32, True), (burn.float32, False))),
        ("binary", "floor_div", burn.int32, ((burn.int32, True), (burn.int32, False))),
        ("unary", "gelu", burn.float32, ((burn.float32, True),)),
    ):
        expr, is_bool = EW.expression(kind, op, dt)
        out_dt = burn.bool if is_bool else dt
        out[f"vec4/{kind}/{op}/{dt.name}"] = EW.render_vec4(expr, is_bool, out_dt, operands).source
    for blk in KM.BLOCKS:  # register-blocked matmul: every tile in the common modes, every mode once
        out[f"matmul_blocked/float32/{blk.name}/k4n4v"] = KM.render_blocked(
            burn.float32, 1, blk, "k4", "n4", True
        ).source
    for am, bm in zip(KM.A_MODES, KM.B_MODES):
        out[f"matmul_blocked/float32/{am}{bm}"] = KM.render_blocked(
            burn.float32, 0, KM.BLOCKS[0], am, bm
        ).source
    for am, bm in zip(KM.A_MODES, KM.B_MODES):  # with register prefetching
        out[f"matmul_blocked/float32/{am}{bm}/prefetch"] = KM.render_blocked(
            burn.float32, 1, KM.BLOCKS[3], am, bm, am == "k4", prefetch=True
        ).source
    out["matmul_blocked/float32/partial"] = KM.render_blocked(
        burn.float32, 0, KM.BLOCKS[0], "k4", "n4", True, partial=True
    ).source
    out["matmul_blocked/float16/h"] = KM.render_blocked(
        burn.float16, 0, KM.BLOCKS[2], "k4", "n4", True, acc16=True
    ).source
    pair_block = KM.Block(64, 128, 64, 4, 8)
    for layout in KMP.PAIR_LAYOUTS:  # k-pair float16 matmul: every layout, every load mode once
        out[f"matmul_pairs/{layout}/k4n4"] = KMP.render_pairs(
            burn.float16, 0, pair_block, layout, "k4", "n4"
        ).source
    for am, bm in zip(KM.A_MODES[1:], KM.B_MODES[1:]):
        out[f"matmul_pairs/s4/{am}{bm}/fold2"] = KMP.render_pairs(
            burn.float16, 1, pair_block, "s4", am, bm, fold=2
        ).source
    for dt in (burn.float32, burn.float16):
        out[f"conv_im2col/{dt.name}/k3x3"] = KC.render_im2col(dt, 3, 3).source
        out[f"conv_implicit/{dt.name}/k3x3"] = KC.render_implicit(dt, KM.BLOCKS[0], 3, 3, "k4", True).source
    out["conv_implicit/float32/k1x2/b64x128"] = KC.render_implicit(
        burn.float32, KM.BLOCKS[4], 1, 2, "k1", False
    ).source
    for dt in (burn.float32, burn.float16):  # the direct conv kernels (no workgroup memory)
        out[f"conv_direct/{dt.name}/k3x3/c4p4/bias"] = KC.render_direct(dt, 3, 3, 4, 4, True).source
        out[f"conv_depthwise/{dt.name}/k3x3/c1p4/bias"] = KC.render_direct(dt, 3, 3, 1, 4, True, True).source
        out[f"conv_pointwise/{dt.name}/c4/vec4/bias"] = KC.render_pointwise(dt, 4, True, True).source
    out["conv_direct/float32/k1x2/c2p1"] = KC.render_direct(burn.float32, 1, 2, 2, 1, False).source
    out["conv_pointwise/float32/c4"] = KC.render_pointwise(burn.float32, 4, False, False).source
    out["matmul_split_sum/float32"] = KM.render_split_sum(burn.float32).source
    out["matmul_split_sum/float16"] = KM.render_split_sum(burn.float16).source
    for dt in (burn.float32, burn.int32, burn.uint32):
        out[f"scatter_add/{dt.name}"] = KI.render_scatter_add(dt, burn.int32, 2, 0).source
    for nb, packed in ((0, False), (1, False), (1, True)):  # int8 matmul: unpacked and dot4I8Packed
        out[f"quantized_matmul/{nb}b{'/dp4' if packed else ''}"] = KQ.render(nb, packed).source
    for px in KP.PER_INVOCATION:  # the tuned pool family: every op and dtype, each outputs-per-invocation
        for dt in (burn.float32, burn.float16, burn.int32, burn.uint32):
            out[f"pool/max/{dt.name}/w128p{px}"] = KP.render("max", dt, 128, px).source
        for dt in (burn.float32, burn.float16):
            out[f"pool/avg/{dt.name}/w128p{px}"] = KP.render("avg", dt, 128, px).source
    narrow = (burn.int8, burn.uint8, burn.int16)  # stored in 32-bit words, wrapped on every store
    for dt in narrow:
        for other in DTYPES:
            for src, dst in ((dt, other), (other, dt)):
                expr, _ = EW.expression("cast", "cast", src, dst)
                out[f"cast/{src.name}->{dst.name}"] = EW.render(
                    expr, False, dst, ((src, True),), 1, True
                ).source
        expr, _ = EW.expression("binary", "mul", dt)
        out[f"binary/mul/{dt.name}"] = EW.render(expr, False, dt, ((dt, True), (dt, False)), 2, False).source
        out[f"vec4/binary/add/{dt.name}"] = EW.render_vec4(
            "a + b", False, dt, ((dt, True), (dt, True))
        ).source
        out[f"reduce/sum/{dt.name}/tree"] = KR.render("sum", dt, dt, False).source
        out[f"cumsum/{dt.name}"] = KS.render("cumsum", dt).source
    # flash attention: every mask kind at one head size, odd and largest head sizes, float16
    for dt, e, ev, masks in (
        (burn.float32, 64, 64, KA.MASKS),
        (burn.float32, 6, 5, ("none",)),
        (burn.float32, 128, 128, ("causal",)),
        (burn.float16, 64, 64, ("none", "float16")),
    ):
        for mask in masks:
            for name, render in (("fwd", KA.forward), ("dq", KA.dq), ("dkv", KA.dkv)):
                out[f"attention/{name}/{dt.name}/e{e}v{ev}/{mask}"] = render(dt, e, ev, mask).source
        out[f"attention/stats/{dt.name}/v{ev}"] = KA.stats(dt, ev).source
    return out
