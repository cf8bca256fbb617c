"""The op tables every backend shares: element-wise and reduction op names, grouped as in Burn.

Backends implement ``unary(op, x)``, ``binary(op, a, b)`` and ``reduce(op, x, dims, keepdim)`` for the
names below; GPU backends render each name from one expression table, and the autodiff decorator keys
its backward rules on the same names. Adding an op = one row here and one row in each table.
"""

# name -> dtype class the op accepts: "float" (floats only), "num" (ints and floats), "any" (also bool),
# "int" (ints and bool: bitwise ops)
UNARY_OPS: dict[str, str] = {
    "neg": "num",
    "abs": "num",
    "sign": "num",
    "square": "num",
    "exp": "float",
    "expm1": "float",
    "log": "float",
    "log1p": "float",
    "sqrt": "float",
    "rsqrt": "float",
    "sin": "float",
    "cos": "float",
    "tan": "float",
    "asin": "float",
    "acos": "float",
    "atan": "float",
    "sinh": "float",
    "cosh": "float",
    "tanh": "float",
    "erf": "float",
    "floor": "float",
    "ceil": "float",
    "round": "float",
    "trunc": "float",
    "reciprocal": "float",
    "isnan": "float",
    "isinf": "float",
    "not": "int",
    # activations (Burn's ActivationOps): element-wise too, so they live in the same table
    "relu": "num",
    "sigmoid": "float",
    "gelu": "float",
    "gelu_tanh": "float",
    "silu": "float",
    "softplus": "float",
    "mish": "float",
    "hard_sigmoid": "float",
}

# Burn's ActivationOps: element-wise, in the unary table for the frontend's dtype rules, but a backend
# runs them through ``Backend.activation`` (its own kernel when native, else a core composition)
ACTIVATION_OPS = frozenset(
    {"relu", "sigmoid", "gelu", "gelu_tanh", "silu", "softplus", "mish", "hard_sigmoid"}
)

# ops whose result is bool whatever the input
UNARY_BOOL_RESULT = frozenset({"isnan", "isinf"})

BINARY_OPS: dict[str, str] = {
    "add": "num",
    "sub": "num",
    "mul": "num",
    "div": "num",
    "floor_div": "num",
    "remainder": "num",
    "fmod": "num",
    "pow": "num",
    "maximum": "num",
    "minimum": "num",
    "atan2": "float",
    "eq": "any",
    "ne": "any",
    "lt": "num",
    "le": "num",
    "gt": "num",
    "ge": "num",
    "and": "int",
    "or": "int",
    "xor": "int",
}

COMPARISON_OPS = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})

REDUCE_OPS: dict[str, str] = {
    "sum": "num",
    "mean": "float",
    "prod": "num",
    "max": "num",
    "min": "num",
    "all": "any",
    "any": "any",
}

ARG_REDUCE_OPS = ("argmax", "argmin")
