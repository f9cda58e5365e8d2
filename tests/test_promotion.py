"""Type promotion, table-driven: the table holds PyTorch's answers; torch, when installed,
confirms the table itself."""
import pytest

import ember

E = ember
# (lhs, rhs, op, expected result dtype). "t:<dtype>" is a 1-D tensor, "z:<dtype>" a 0-d tensor,
# other entries are Python scalars.
CASES = [
    ("t:float32", "t:float32", "add", "float32"),
    ("t:float32", "t:float64", "add", "float64"),
    ("t:float16", "t:float32", "add", "float32"),
    ("t:float16", "t:bfloat16", "add", "float32"),
    ("t:bfloat16", "t:bfloat16", "mul", "bfloat16"),
    ("t:int32", "t:int64", "add", "int64"),
    ("t:uint8", "t:int8", "add", "int16"),
    ("t:uint8", "t:int16", "add", "int16"),
    ("t:uint8", "t:uint8", "add", "uint8"),
    ("t:int8", "t:int8", "mul", "int8"),
    ("t:bool", "t:bool", "add", "bool"),
    ("t:bool", "t:uint8", "add", "uint8"),
    ("t:bool", "t:float16", "mul", "float16"),
    ("t:int64", "t:float16", "add", "float16"),
    ("t:int32", "t:float32", "add", "float32"),
    ("t:int64", "t:complex64", "add", "complex64"),
    ("t:float64", "t:complex64", "add", "complex128"),
    ("t:complex64", "t:complex128", "add", "complex128"),
    ("t:int32", 2.5, "add", "float32"),
    ("t:int64", 2.5, "mul", "float32"),
    ("t:float16", 2.5, "add", "float16"),
    ("t:float16", 2, "add", "float16"),
    ("t:int8", 1000, "add", "int8"),
    ("t:uint8", 5, "add", "uint8"),
    ("t:bool", 1, "add", "int64"),
    ("t:bool", 1.5, "add", "float32"),
    ("t:bool", True, "add", "bool"),
    ("t:int32", True, "add", "int32"),
    ("t:float32", 1j, "add", "complex64"),
    ("t:float64", 1j, "add", "complex128"),
    ("t:int32", 1j, "add", "complex64"),
    ("t:float32", "z:float64", "add", "float32"),
    ("t:int32", "z:int64", "add", "int32"),
    ("t:int32", "z:float64", "add", "float64"),  # a float 0-d tensor lifts an int tensor fully
    ("t:uint8", "z:int8", "add", "uint8"),
    ("t:float16", "z:float64", "add", "float16"),
    ("z:float32", "z:float64", "add", "float64"),
    ("z:int32", "z:float16", "add", "float16"),
    ("z:int64", 2.5, "add", "float32"),
    ("t:int32", "t:int32", "div", "float32"),
    ("t:int64", 2, "div", "float32"),
    ("t:uint8", "t:uint8", "div", "float32"),
    ("t:float64", 2, "div", "float64"),
    ("t:int32", "t:int64", "lt", "bool"),
    ("t:float32", 1, "eq", "bool"),
    ("t:int32", "t:int32", "floor_divide", "int32"),
    ("t:int16", 3, "remainder", "int16"),
    ("t:int32", 2.0, "pow", "float32"),
    ("t:float32", "t:float64", "maximum", "float64"),
    ("t:int64", "t:int64", "atan2", "float32"),
]

OPS = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b,
       "lt": lambda a, b: a < b, "eq": lambda a, b: a == b,
       "floor_divide": lambda a, b: a // b, "remainder": lambda a, b: a % b,
       "pow": lambda a, b: a ** b, "maximum": lambda a, b: a.maximum(b),
       "atan2": lambda a, b: a.atan2(b)}


def make(lib, spec):
    if isinstance(spec, str):
        kind, dt = spec.split(":")
        shape = (3,) if kind == "t" else ()
        return lib.ones(shape, dtype=getattr(lib, dt))
    return spec


@pytest.mark.parametrize("lhs,rhs,op,expected", CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}"
                                                              for c in CASES])
def test_result_dtype(lhs, rhs, op, expected):
    a, b = make(E, lhs), make(E, rhs)
    assert OPS[op](a, b).dtype is getattr(E, expected)
    if op in ("add", "mul"):
        assert E.result_type(a, b) is getattr(E, expected)


@pytest.mark.parametrize("lhs,rhs,op,expected", CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}"
                                                              for c in CASES])
def test_table_agrees_with_torch(lhs, rhs, op, expected):
    torch = pytest.importorskip("torch")
    a, b = make(torch, lhs), make(torch, rhs)
    fn = {"maximum": lambda a, b: torch.maximum(a, b),
          "atan2": lambda a, b: torch.atan2(a, b)}.get(op, OPS[op])
    assert str(fn(a, b).dtype) == f"torch.{expected}"


def test_default_dtype_changes_scalar_promotion():
    E.set_default_dtype(E.float64)
    try:
        assert (E.ones(2, dtype=E.int32) + 2.5).dtype is E.float64
        assert E.tensor([1.0]).dtype is E.float64
        assert (E.ones(2, dtype=E.int32) / 2).dtype is E.float64
        assert (E.ones(2, dtype=E.int32) + 1j).dtype is E.complex128
    finally:
        E.set_default_dtype(E.float32)
    with pytest.raises(TypeError, match="only floating-point types"):
        E.set_default_dtype(E.int64)


def test_promote_types_and_can_cast():
    assert E.promote_types(E.uint8, E.int8) is E.int16
    assert E.promote_types(E.bool, E.bool) is E.bool
    assert E.promote_types(E.bfloat16, E.float16) is E.float32
    assert E.can_cast(E.int32, E.float32) and not E.can_cast(E.float32, E.int32)
    assert not E.can_cast(E.int64, E.bool) and E.can_cast(E.bool, E.uint8)
    assert not E.can_cast(E.complex64, E.float64)


def test_inplace_refuses_lossy_category_change():
    x = E.ones(2, dtype=E.int64)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        x.add_(1.5)
    y = E.ones(2, dtype=E.float32)
    y.add_(E.ones(2, dtype=E.float64))        # same category: allowed, stays float32
    assert y.dtype is E.float32
