"""The lowering facets on the ops themselves: what every ``pointwise`` rule may call, and what
the foreach ops' ``applies`` facets promise fusion (no C compiler or device needed)."""
from __future__ import annotations

import itertools

from ember import _dtype
from ember.compiler.fusion import Local
from ember.compiler.pointwise import MATH_FUNCTIONS, Dialect
from ember.dispatch.dispatcher import all_ops, get_op

#: probe values per schema type: operands (or the Python numbers a graph may hold there) where
#: tensors go, a few numbers elsewhere
_PROBES = {"Tensor": ["T", 0.5], "Tensor?": [None, "T", 0.5], "Scalar": [1, 2, 0.5],
           "Scalar?": [None, 0.5], "float": [1.0, 0.5, float("inf")], "float?": [None, 0.5],
           "int": [1, 2], "str?": [None, "floor"], "str": ["none", "tanh"], "bool": [False, True],
           "dtype": ["DT"], "Tensor|float": ["T", 0.5]}


class _Recording(Dialect):
    def __init__(self, dtype, called):
        super().__init__(dtype, lambda local: f"x{local.index}")
        self.called = called

    def fn(self, name, *args):
        self.called.add(name)
        return super().fn(name, *args)


def _renderings(op):
    """Every expression ``op``'s rule gives over the probe arguments, float32 and float64."""
    choices = [_PROBES.get(a.type.replace("(a!)", ""), [None]) for a in op.schema.arguments]
    for combo in itertools.product(*choices):
        for dt in (_dtype.float32, _dtype.float64):
            args, k = [], 0
            for v in combo:
                if v == "T":
                    args.append(Local("in", k))
                    k += 1
                else:
                    args.append(dt if v == "DT" else v)
            yield dt, args


def test_pointwise_rules_call_only_the_math_functions_every_backend_spells():
    # a fused loop declares MATH_FUNCTIONS (the CPU's C compiler needs each declared): a rule
    # calling anything else would break compilation on some backend
    called = set()
    ops = [get_op(n) for n in sorted(all_ops()) if get_op(n).pointwise is not None]
    assert len(ops) >= 49
    rendered = 0
    for op in ops:
        for dt, args in _renderings(op):
            expr = op.pointwise(_Recording(dt, called), *args)
            rendered += expr is not None
    assert rendered > 300
    assert called <= set(MATH_FUNCTIONS), called - set(MATH_FUNCTIONS)


def test_foreach_ops_apply_an_op_fusion_can_render_with_their_arguments():
    foreach = [get_op(n) for n in sorted(all_ops()) if get_op(n).applies is not None]
    assert {op.name for op in foreach} >= {"_foreach_add_", "_foreach_mul_", "_foreach_lerp_",
                                           "_foreach_addcdiv_"}
    for op in foreach:
        applied = op.applies
        assert applied.pointwise is not None and not applied.mutates, op.name
        # the foreach op's arguments, element by element, are a prefix of the applied op's
        n = len(op.schema.arguments)
        assert n <= len(applied.schema.arguments), op.name
        args = [Local("in", i) if a.type.endswith("[]") else 2.0
                for i, a in enumerate(op.schema.arguments)]
        assert applied.pointwise(Dialect(_dtype.float32, lambda x: f"x{x.index}"), *args)


def test_every_onnx_rule_takes_the_builder_the_context_and_the_schema_arguments():
    import inspect
    for name in sorted(all_ops()):
        rule = get_op(name).onnx
        if rule is None:
            continue
        params = list(inspect.signature(rule).parameters.values())
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                      p.POSITIONAL_OR_KEYWORD)]
        varargs = any(p.kind is p.VAR_POSITIONAL for p in params)
        n_args = len(get_op(name).schema.arguments)
        assert len(positional) >= 2 and (varargs or len(positional) - 2 >= n_args), name
        required = [p for p in positional[2:] if p.default is p.empty]
        assert len(required) <= n_args, name
