"""``Proxy``: the value symbolic tracing passes through a program instead of a tensor.

Every operation on a proxy records a node in the tracer's graph and returns a new proxy:
Python operators (``x + y`` → ``call_function operator.add``), attribute reads
(``x.shape`` → ``getattr``), method calls (``x.view(2, -1)`` → ``call_method view``) and
ember functions (``ember.relu(x)`` → ``call_function ember.relu``: the tracer patches ember's
public functions while it runs, see ``tracer.py``). Control flow on a proxy
(``if x.sum() > 0``) can't be recorded and raises ``TraceError``, as in torch.fx."""
from __future__ import annotations

import dis
import operator
import sys
import traceback
import ember

from .node import Node

__all__ = ["Proxy", "Attribute", "TraceError", "TracerBase", "GraphAppendingTracer"]


class TraceError(ValueError):
    pass


class TracerBase:
    """Node and proxy creation shared by ``Tracer`` and ``Transformer``'s tracer."""

    graph = None
    record_stack_traces = False
    proxy_buffer_attributes = False
    traced_func_name = "forward"

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node):
        return Proxy(node, self)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None,
                     proxy_factory_fn=None):
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        if self.record_stack_traces:
            node.stack_trace = _user_stack()
        return proxy_factory_fn(node) if proxy_factory_fn is not None else self.proxy(node)

    def create_arg(self, a):
        """A graph argument for the Python value ``a`` (proxies become their nodes)."""
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, Node):
            return a
        if isinstance(a, tuple):
            items = [self.create_arg(x) for x in a]
            return type(a)(*items) if hasattr(a, "_fields") else tuple(items)
        if isinstance(a, list):
            return [self.create_arg(x) for x in a]
        if isinstance(a, dict):
            out = {}
            for k, v in a.items():
                if isinstance(k, Proxy):
                    raise TraceError("Keys of dicts passed through a traced program can't be "
                                     "proxies")
                out[k] = self.create_arg(v)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if isinstance(a, range):
            return range(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if a is None or a is Ellipsis or isinstance(a, (bool, int, float, complex, str, bytes)):
            return a
        if isinstance(a, (ember.dtype, ember.device)) or callable(a):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj):
        raise TraceError("symbolically traced variables cannot be used as inputs to control "
                         "flow")

    def iter(self, obj):
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the "
                         "Proxy is used in a loop or as a *args or **kwargs function argument. "
                         "See the ember.fx docs on symbolic tracing for more information")

    def keys(self, obj):
        return Attribute(obj, "keys")()


def _user_stack():
    frames = [f for f in traceback.extract_stack()
              if "/ember/fx/" not in f.filename.replace("\\", "/")]
    return "".join(traceback.format_list(frames[-1:]))


class GraphAppendingTracer(TracerBase):
    """The tracer of a proxy made directly over a graph's node: appends to that graph."""

    def __init__(self, graph):
        super().__init__()
        self.graph = graph
        self.scope = None


class Proxy:
    """A traced value: operations on it become nodes of ``tracer.graph``."""

    def __init__(self, node, tracer=None):
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self):
        return f"Proxy({self.node.name})"

    def __getattr__(self, k):
        if k in ("node", "tracer"):
            raise AttributeError(k)
        return Attribute(self, k)

    def __getstate__(self):
        return self.__dict__

    def __deepcopy__(self, memo):
        raise TraceError("a Proxy can't be deep-copied while tracing")

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """An ember function called with a proxy outside a trace (a proxy over a graph's node,
        a traced module called with one) becomes a ``call_function`` node of the proxy's graph:
        the binding layer hands a call whose arguments it refuses to this, torch's protocol."""
        proxies = [a for a in (*args, *(kwargs or {}).values()) if isinstance(a, Proxy)]
        proxies += [x for a in args if isinstance(a, (list, tuple)) for x in a
                    if isinstance(x, Proxy)]
        return proxies[0].tracer.create_proxy("call_function", func, args, kwargs or {})

    def __iter__(self):
        # ``a, b = proxy``: the caller's next instruction says how many items to make
        frame = sys._getframe(1)
        instructions = list(dis.get_instructions(frame.f_code))
        for inst in instructions:
            if inst.offset == frame.f_lasti:
                if inst.opname == "UNPACK_SEQUENCE":
                    return (self[i] for i in range(inst.argval))
                break
        return self.tracer.iter(self)

    def __bool__(self):
        return self.tracer.to_bool(self)

    def __len__(self):
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want "
                           "this call to be recorded, please call ember.fx.wrap('len') at "
                           "module scope")

    def keys(self):
        return self.tracer.keys(self)

    def __index__(self):
        raise TraceError("a Proxy can't be used as an index of a Python sequence")

    def __hash__(self):
        return id(self)

    def __abs__(self):
        return self.tracer.create_proxy("call_function", operator.abs, (self,), {})


class Attribute(Proxy):
    """``proxy.name``: a ``getattr`` node made on first use, or a ``call_method`` when
    called."""

    def __init__(self, root, attr):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self):
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr,
                                                  (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


_MAGIC = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
          "floordiv": operator.floordiv, "truediv": operator.truediv, "mod": operator.mod,
          "pow": operator.pow, "lshift": operator.lshift, "rshift": operator.rshift,
          "and": operator.and_, "or": operator.or_, "xor": operator.xor,
          "matmul": operator.matmul, "getitem": operator.getitem, "eq": operator.eq,
          "ne": operator.ne, "lt": operator.lt, "gt": operator.gt, "le": operator.le,
          "ge": operator.ge}
_REFLECTABLE = ("add", "sub", "mul", "floordiv", "truediv", "mod", "pow", "lshift", "rshift",
                "and", "or", "xor", "matmul")


def _define(name, fn):
    def impl(self, *args):
        return self.tracer.create_proxy("call_function", fn, (self,) + args, {})
    impl.__name__ = f"__{name}__"
    setattr(Proxy, impl.__name__, impl)


def _define_reflected(name, fn):
    def impl(self, rhs):
        return self.tracer.create_proxy("call_function", fn, (rhs, self), {})
    impl.__name__ = f"__r{name}__"
    setattr(Proxy, impl.__name__, impl)


for _name, _fn in _MAGIC.items():
    _define(_name, _fn)
for _name in _REFLECTABLE:
    _define_reflected(_name, _MAGIC[_name])
for _name, _fn in (("neg", operator.neg), ("pos", operator.pos), ("invert", operator.invert)):
    _define(_name, _fn)
Proxy.__div__ = Proxy.__truediv__
