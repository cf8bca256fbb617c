"""WGSL helper functions shared by the expression table (included in a kernel only when used).

Floats compute in f32 (float16 storage is widened on load), so one helper serves both. GPU drivers
leave many edge cases undefined (log of a negative, pow of a negative base, NaN in max/min), so the
helpers spell out NumPy's answers; NaN tests use the bit pattern, which no fast-math pass removes.
float64 (``_d``) and int64 (``_l``) versions serve the 64-bit dtypes: the f64 ones are the f32 sources
retyped (``_as_f64``), with trunc and round built from floor and ceil.
"""

from __future__ import annotations

import re

HELPERS: dict[str, str] = {
    "is_nan": "fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }",
    "is_inf": "fn is_inf(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }",
    # NaN/Inf from their bits through a parameter: a run-time value, never a constant expression
    # (Chrome's Tint rejects a constant ``bitcast<f32>(0x7fc00000u)``: "value nan cannot be
    # represented as 'f32'"; naga accepts both)
    "f32_bits": "fn f32_bits(bits: u32) -> f32 { return bitcast<f32>(bits); }",
    "nan": "fn nan() -> f32 { return f32_bits(0x7fc00000u); }",
    "inf": "fn inf() -> f32 { return f32_bits(0x7f800000u); }",
    "b_log": """fn b_log(x: f32) -> f32 {
    if (x < 0.0 || is_nan(x)) { return nan(); }
    if (x == 0.0) { return -inf(); }
    if (is_inf(x)) { return x; }
    return log(x);
}""",
    "b_sqrt": """fn b_sqrt(x: f32) -> f32 {
    if (x < 0.0 || is_nan(x)) { return nan(); }
    if (is_inf(x)) { return x; }
    return sqrt(x);
}""",
    "b_expm1": """fn b_expm1(x: f32) -> f32 {
    // Kahan: (u - 1) * x / log(u) cancels the rounding error of u = exp(x)
    let u = exp(x);
    if (u == 1.0 || is_nan(x)) { return x; }
    let um1 = u - 1.0;
    if (um1 == -1.0) { return -1.0; }
    if (is_inf(u)) { return u; }
    return um1 * x / log(u);
}""",
    "b_log1p": """fn b_log1p(x: f32) -> f32 {
    if (x < -1.0 || is_nan(x)) { return nan(); }
    if (x == -1.0) { return -inf(); }
    if (is_inf(x)) { return x; }
    if (abs(x) < 0.5) {
        // log1p(x) = 2 atanh(s), s = x / (2 + x), |s| <= 1/3: the series, not log(1 + x), whose
        // absolute error near 1 (2^-21 allowed by Vulkan, seen on lavapipe) swamps a small result
        let s = x / (2.0 + x);
        let s2 = s * s;
        let tail = 1.0 / 9.0 + s2 * (1.0 / 11.0 + s2 * (1.0 / 13.0 + s2 * (1.0 / 15.0)));
        return 2.0 * s * (1.0 + s2 * (1.0 / 3.0 + s2 * (1.0 / 5.0 + s2 * (1.0 / 7.0 + s2 * tail))));
    }
    let u = 1.0 + x;
    return log(u) * x / (u - 1.0);
}""",
    "b_tanh": """fn b_tanh(x: f32) -> f32 {
    if (is_nan(x)) { return x; }
    // near 0 a driver's (e^2x - 1) / (e^2x + 1) loses x to cancellation (lavapipe: tanh(1e-7) =
    // 1.19e-7): the series to x^5, exact to f32 rounding below 0.01
    if (abs(x) < 0.01) { let x2 = x * x; return x * (1.0 - x2 * (1.0 / 3.0 - x2 * (2.0 / 15.0))); }
    return tanh(clamp(x, -15.0, 15.0));  // some drivers compute tanh as inf/inf for large |x|
}""",
    # sin/cos/tan with our own range reduction and polynomials: Vulkan only promises 2^-11 absolute
    # error for the builtins, and NVIDIA's tan(30) is off by 2e-5 relative
    "sincos_q": """fn sincos_q(x: f32) -> vec3<f32> {
    // (sin r, cos r, quadrant) with x = r + q * pi / 2, |r| <= pi / 4 (two-part Cody-Waite)
    let k = round(x * 0.6366197724);
    let r = (x - k * 1.5707963705) + k * 4.371139e-08;
    let r2 = r * r;
    let s = r * (1.0 + r2 * (-0.1666666667 + r2 * (0.0083333333 + r2 * (-0.0001984127 + r2 * 0.0000027557))));
    let c = 1.0 + r2 * (-0.5 + r2 * (0.0416666667 + r2 * (-0.0013888889 + r2 * (0.0000248016 - r2 * 0.0000002756))));
    return vec3<f32>(s, c, f32(i32(k) & 3));
}""",
    "b_sin": """fn b_sin(x: f32) -> f32 {
    if (is_nan(x) || is_inf(x)) { return nan(); }
    let v = sincos_q(x);
    let q = u32(v.z);
    if (q == 0u) { return v.x; }
    if (q == 1u) { return v.y; }
    if (q == 2u) { return -v.x; }
    return -v.y;
}""",
    "b_cos": """fn b_cos(x: f32) -> f32 {
    if (is_nan(x) || is_inf(x)) { return nan(); }
    let v = sincos_q(x);
    let q = u32(v.z);
    if (q == 0u) { return v.y; }
    if (q == 1u) { return -v.x; }
    if (q == 2u) { return -v.y; }
    return v.x;
}""",
    "b_tan": """fn b_tan(x: f32) -> f32 {
    if (is_nan(x) || is_inf(x)) { return nan(); }
    let v = sincos_q(x);
    if ((u32(v.z) & 1u) == 0u) { return v.x / v.y; }
    return -v.y / v.x;
}""",
    # our own atan: lavapipe's is accurate to ~4e-6 absolute, its asin/acos to ~3e-4
    "b_atan": """fn b_atan(x: f32) -> f32 {
    if (is_nan(x)) { return x; }
    var t = abs(x);
    var base = 0.0;
    var flip = t > 1.0;
    if (flip) { t = 1.0 / t; }
    if (t > 0.2679491924) {  // tan(pi/12): shift by pi/6
        t = (t * 1.7320508076 - 1.0) / (t + 1.7320508076);
        base = 0.5235987756;
    }
    let t2 = t * t;
    var r = base + t * (1.0 + t2 * (-0.3333333333 + t2 * (0.2 + t2 * (-0.1428571429 + t2 * (0.1111111111 - t2 * 0.0909090909)))));
    if (flip) { r = 1.5707963268 - r; }
    return select(r, -r, x < 0.0);
}""",
    "b_atan2": """fn b_atan2(y: f32, x: f32) -> f32 {
    if (is_nan(x) || is_nan(y)) { return nan(); }
    let pi = 3.1415926536;
    let sy = select(1.0, -1.0, y < 0.0 || (y == 0.0 && bitcast<u32>(y) != 0u));
    if (is_inf(x) || is_inf(y)) {
        if (is_inf(x) && is_inf(y)) { return sy * select(0.25 * pi, 0.75 * pi, x < 0.0); }
        if (is_inf(y)) { return sy * 0.5 * pi; }
        return select(sy * 0.0, sy * pi, x < 0.0);
    }
    if (x == 0.0) {
        if (y == 0.0) { return select(sy * 0.0, sy * pi, bitcast<u32>(x) != 0u); }
        return sy * 0.5 * pi;
    }
    var r = b_atan(y / x);
    if (x < 0.0) { r += sy * pi; }
    return r;
}""",
    "b_asin": """fn b_asin(x: f32) -> f32 {
    if (abs(x) > 1.0 || is_nan(x)) { return nan(); }
    return b_atan2(x, sqrt((1.0 - x) * (1.0 + x)));
}""",
    "b_acos": """fn b_acos(x: f32) -> f32 {
    if (abs(x) > 1.0 || is_nan(x)) { return nan(); }
    return b_atan2(sqrt((1.0 - x) * (1.0 + x)), x);
}""",
    "b_erf": """fn b_erf(x: f32) -> f32 {
    let ax = abs(x);
    if (ax < 0.5) {
        let x2 = x * x;  // Taylor series: exact to f32 precision on |x| < 0.5
        return 1.1283791670955126 * x * (1.0 + x2 * (-0.3333333333 + x2 * (0.1 + x2 * (-0.0238095238 + x2 * 0.0046296296))));
    }
    if (is_nan(x)) { return x; }
    // Abramowitz-Stegun 7.1.26 (abs error < 1.5e-7)
    let t = 1.0 / (1.0 + 0.3275911 * ax);
    let poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
    return sign(x) * (1.0 - poly * exp(-ax * ax));
}""",
    "b_softplus": "fn b_softplus(x: f32) -> f32 { return max(x, 0.0) + b_log1p(exp(-abs(x))); }",
    "b_max": "fn b_max(a: f32, b: f32) -> f32 { if (is_nan(a) || is_nan(b)) { return nan(); } return max(a, b); }",
    "b_min": "fn b_min(a: f32, b: f32) -> f32 { if (is_nan(a) || is_nan(b)) { return nan(); } return min(a, b); }",
    "b_sign": "fn b_sign(x: f32) -> f32 { if (is_nan(x)) { return x; } return sign(x); }",
    "b_fmod": """fn b_fmod(a: f32, b: f32) -> f32 {
    if (b == 0.0 || is_inf(a) || is_nan(a) || is_nan(b)) { return nan(); }
    if (is_inf(b)) { return a; }
    var r = fma(-trunc(a / b), b, a);
    let ab = abs(b);  // a / b may round across an integer: bring r back into a's half-open range
    if (a >= 0.0) {
        if (r < 0.0) { r += ab; }
        if (r >= ab) { r -= ab; }
    } else {
        if (r > 0.0) { r -= ab; }
        if (r <= -ab) { r += ab; }
    }
    return r;
}""",
    "b_rem_f": """fn b_rem_f(a: f32, b: f32) -> f32 {
    let r = b_fmod(a, b);
    if (r != 0.0 && ((r < 0.0) != (b < 0.0))) { return r + b; }
    return r;
}""",
    "b_floordiv_f": """fn b_floordiv_f(a: f32, b: f32) -> f32 {
    // NumPy's npy_divmod: the quotient that agrees with remainder()
    if (b == 0.0 || is_nan(a) || is_nan(b) || is_inf(a)) { return a / b; }
    var m = b_fmod(a, b);
    var d = (a - m) / b;
    if (m != 0.0 && ((b < 0.0) != (m < 0.0))) { d -= 1.0; }
    if (d == 0.0) { return 0.0 * (a / b); }
    var f = floor(d);
    if (d - f > 0.5) { f += 1.0; }
    return f;
}""",
    "b_pow_f": """fn b_pow_f(a: f32, b: f32) -> f32 {
    if (b == 0.0 || a == 1.0) { return 1.0; }
    if (is_nan(a) || is_nan(b)) { return nan(); }
    if (b == 1.0) { return a; }
    if (b == 2.0) { return a * a; }
    if (a == 0.0) { if (b < 0.0) { return inf(); } return 0.0; }
    if (a < 0.0) {
        let bi = round(b);
        if (bi != b) { return nan(); }
        let m = pow(-a, b);
        let h = bi * 0.5;
        if (h != floor(h)) { return -m; }
        return m;
    }
    return pow(a, b);
}""",
    "b_pow_i": """fn b_pow_i(a: i32, b: i32) -> i32 {
    if (b < 0) {
        if (a == 1) { return 1; }
        if (a == -1) { return select(1, -1, (b & 1) != 0); }
        return 0;
    }
    var r = 1;
    var base = a;
    var e = b;
    loop {
        if (e == 0) { break; }
        if ((e & 1) != 0) { r = r * base; }
        base = base * base;
        e = e >> 1u;
    }
    return r;
}""",
    "b_pow_u": """fn b_pow_u(a: u32, b: u32) -> u32 {
    var r = 1u;
    var base = a;
    var e = b;
    loop {
        if (e == 0u) { break; }
        if ((e & 1u) != 0u) { r = r * base; }
        base = base * base;
        e = e >> 1u;
    }
    return r;
}""",
    # i32 remainders from the truncating quotient, never WGSL's %: NVIDIA's Vulkan driver gave wrong
    # floor_div/remainder results for negative operands when a kernel held several of them (fused
    # and vec4 kernels on an H200), while a - b * (a / b) is exact everywhere
    "b_floordiv_i": """fn b_floordiv_i(a: i32, b: i32) -> i32 {
    if (b == 0) { return 0; }
    let q = a / b;
    if ((a - b * q) != 0 && ((a < 0) != (b < 0))) { return q - 1; }
    return q;
}""",
    "b_rem_i": """fn b_rem_i(a: i32, b: i32) -> i32 {
    if (b == 0) { return 0; }
    let r = a - b * (a / b);
    if (r != 0 && ((r < 0) != (b < 0))) { return r + b; }
    return r;
}""",
    "b_div_i": "fn b_div_i(a: i32, b: i32) -> i32 { if (b == 0) { return 0; } return a / b; }",
    "b_div_u": "fn b_div_u(a: u32, b: u32) -> u32 { if (b == 0u) { return 0u; } return a / b; }",
    "b_rem_u": "fn b_rem_u(a: u32, b: u32) -> u32 { if (b == 0u) { return 0u; } return a % b; }",
    # from the (well-defined) truncating division: NVIDIA's Vulkan driver gave i32 % the divisor's sign
    "b_fmod_i": "fn b_fmod_i(a: i32, b: i32) -> i32 { if (b == 0) { return 0; } return a - b * (a / b); }",
    # x rounded to the nearest float16 (ties to even), kept in f32, with integer arithmetic on the bits:
    # NVIDIA's driver folds f32(f16(x)) and unpack2x16float(pack2x16float(x)) away inside a kernel
    "b_round_f16": """fn b_round_f16(x: f32) -> f32 {
    let a = abs(x);
    if (!(a < 65520.0)) {  // beyond the largest half (65504) once rounded: infinity, or NaN as it is
        if (is_nan(x)) { return x; }
        return select(-inf(), inf(), x > 0.0);
    }
    if (a < 6.103515625e-05) { return round(x * 16777216.0) / 16777216.0; }  // half subnormals: 2^-24 steps
    let bits = bitcast<u32>(x);  // a normal half: 10 of the 23 mantissa bits, rounded to even
    return bitcast<f32>((bits + 0xFFFu + ((bits >> 13u) & 1u)) & 0xFFFFE000u);
}""",
    # a float into a narrow int, before the wrap: NumPy's astype on x86-64 (through int32; 0 for NaN,
    # infinities and values outside int32's range)
    "b_f2iw": """fn b_f2iw(x: f32) -> i32 {
    if (is_nan(x) || !(abs(x) < 2147483648.0)) { return 0i; }
    return i32(trunc(x));
}""",
    "b_f2u": "fn b_f2u(x: f32) -> u32 { if (x < 0.0) { return bitcast<u32>(i32(x)); } return u32(x); }",
}

# helper -> helpers it calls (included first)
DEPENDS: dict[str, tuple[str, ...]] = {
    "nan": ("f32_bits",),
    "b_f2iw": ("is_nan",),
    "b_round_f16": ("is_nan", "inf"),
    "inf": ("f32_bits",),
    "b_log": ("is_nan", "nan", "inf", "is_inf"),
    "b_sqrt": ("is_nan", "nan", "is_inf"),
    "b_expm1": ("is_nan", "is_inf"),
    "b_log1p": ("is_nan", "nan", "inf", "is_inf"),
    "b_tanh": ("is_nan",),
    "b_atan": ("is_nan",),
    "b_sin": ("sincos_q", "is_nan", "is_inf", "nan"),
    "b_cos": ("sincos_q", "is_nan", "is_inf", "nan"),
    "b_tan": ("sincos_q", "is_nan", "is_inf", "nan"),
    "b_atan2": ("b_atan", "is_nan", "is_inf", "nan"),
    "b_asin": ("is_nan", "nan", "b_atan2"),
    "b_acos": ("is_nan", "nan", "b_atan2"),
    "b_erf": ("is_nan",),
    "b_softplus": ("b_log1p",),
    "b_max": ("is_nan", "nan"),
    "b_min": ("is_nan", "nan"),
    "b_sign": ("is_nan",),
    "b_fmod": ("is_nan", "is_inf", "nan"),
    "b_rem_f": ("b_fmod",),
    "b_floordiv_f": ("b_fmod", "is_nan", "is_inf"),
    "b_pow_f": ("is_nan", "nan", "inf"),
}


# f64 versions of f32 helpers whose operations are exact in 64 bits: the same source with f64 types and
# the f64 helper names (``_F64_NAMES``)
_F64_NAMES = {
    "is_nan": "is_nan_d",
    "is_inf": "is_inf_d",
    "nan": "nan_d",
    "inf": "inf_d",
    "b_sqrt": "b_sqrt_d",
    "b_max": "b_max_d",
    "b_min": "b_min_d",
    "b_fmod": "b_fmod_d",
    "b_rem_f": "b_rem_d",
    "b_floordiv_f": "b_floordiv_d",
}
_F64_NAME_RE = re.compile(r"\b(" + "|".join(sorted(_F64_NAMES, key=len, reverse=True)) + r")\(")


def _as_f64(name: str) -> str:
    src = _F64_NAME_RE.sub(lambda m: _F64_NAMES[m.group(1)] + "(", HELPERS[name]).replace("f32", "f64")
    return re.sub(r"\b(trunc|round)\(", r"b_\1_d(", src)


HELPERS.update(
    {
        # an f64 is NaN exactly when its f32 conversion is (a finite f64 never converts to NaN)
        "is_nan_d": "fn is_nan_d(x: f64) -> bool { return is_nan(f32(x)); }",
        "is_inf_d": "fn is_inf_d(x: f64) -> bool { return abs(x) > 1.7976931348623157e308; }",
        "nan_d": "fn nan_d() -> f64 { return f64(nan()); }",
        # trunc and round from floor/ceil: lavapipe's f64 trunc and round return |x| >= 2^31 unchanged
        "b_trunc_d": "fn b_trunc_d(x: f64) -> f64 { return select(ceil(x), floor(x), x >= 0.0); }",
        "b_round_d": """fn b_round_d(x: f64) -> f64 {
    // half to even, as NumPy
    let f = floor(x);
    let d = x - f;
    if (d > 0.5 || (d == 0.5 && floor(f * 0.5) != f * 0.5)) { return f + 1.0; }
    return f;
}""",
        "inf_d": "fn inf_d() -> f64 { return f64(inf()); }",
        **{
            _F64_NAMES[n]: _as_f64(n)
            for n in ("b_sqrt", "b_max", "b_min", "b_fmod", "b_rem_f", "b_floordiv_f")
        },
        # an f64 into i64: truncated; NaN and values outside i64's range give i64's minimum (x86-64's
        # conversion, which NumPy's astype gives there)
        "b_f2l": """fn b_f2l(x: f64) -> i64 {
    if (!(abs(x) < 9.2233720368547758e18)) { return -9223372036854775807li - 1li; }
    return i64(x);
}""",
        "b_div_l": "fn b_div_l(a: i64, b: i64) -> i64 { if (b == 0li) { return 0li; } return a / b; }",
        "b_fmod_l": "fn b_fmod_l(a: i64, b: i64) -> i64 { if (b == 0li) { return 0li; } return a - b * (a / b); }",
        "b_floordiv_l": """fn b_floordiv_l(a: i64, b: i64) -> i64 {
    if (b == 0li) { return 0li; }
    let q = a / b;
    if ((a - b * q) != 0li && ((a < 0li) != (b < 0li))) { return q - 1li; }
    return q;
}""",
        "b_rem_l": """fn b_rem_l(a: i64, b: i64) -> i64 {
    if (b == 0li) { return 0li; }
    let r = a - b * (a / b);
    if (r != 0li && ((r < 0li) != (b < 0li))) { return r + b; }
    return r;
}""",
        "b_pow_l": """fn b_pow_l(a: i64, b: i64) -> i64 {
    if (b < 0li) {
        if (a == 1li) { return 1li; }
        if (a == -1li) { return select(1li, -1li, (b & 1li) != 0li); }
        return 0li;
    }
    var r = 1li;
    var base = a;
    var e = b;
    loop {
        if (e == 0li) { break; }
        if ((e & 1li) != 0li) { r = r * base; }
        base = base * base;
        e = e >> 1u;
    }
    return r;
}""",
    }
)
DEPENDS.update(
    {
        "is_nan_d": ("is_nan",),
        "nan_d": ("nan",),
        "inf_d": ("inf",),
        **{
            _F64_NAMES[n]: (*(_F64_NAMES[d] for d in DEPENDS[n]), "b_trunc_d", "b_round_d")
            for n in ("b_sqrt", "b_max", "b_min", "b_fmod", "b_rem_f", "b_floordiv_f")
        },
    }
)


def render_helpers(names: tuple[str, ...]) -> str:
    """The WGSL of ``names`` and everything they call, each once, dependencies first."""
    out: list[str] = []

    def add(name: str) -> None:
        if name in out:
            return
        for dep in DEPENDS.get(name, ()):
            add(dep)
        out.append(name)

    for name in names:
        add(name)
    return "\n".join(HELPERS[n] for n in out)
