"""``nn.Module``: the base class of every layer (PyTorch's registration, traversal, state_dict,
device/dtype moves, train/eval and hooks).

Parameters, buffers and submodules live in three dicts (``_parameters``, ``_buffers``,
``_modules``) that ``__setattr__`` fills and ``__getattr__`` reads, exactly like PyTorch, so code
written against ``torch.nn.Module`` internals keeps working. ``__call__`` goes straight to
``forward`` when no hook is registered: that is the hot path of every training step.
"""
from __future__ import annotations

import itertools
from collections import OrderedDict, namedtuple
import ember

from ..._tensor import Tensor
from ...utils.hooks import RemovableHandle
from ...dispatch.grad_mode import no_grad
from ...autograd.tensor_api import zero_grads
from ..parameter import Buffer, Parameter
from ... import _dtype
from ...ops.conversion import _parse_to
from ...runtime.registry import registry

__all__ = ["Module"]

_EXTRA_STATE = "_extra_state"   # the state_dict key of get_extra_state()


def _add_hook(d, fn, prepend=False, **flags):
    handle = RemovableHandle(d)
    d[handle.id] = (fn, flags) if flags else fn
    if prepend:
        d.move_to_end(handle.id, last=False)
    return handle


class _HookODict(OrderedDict):
    """An ordered hook dict that RemovableHandle can reference weakly."""


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s, n):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * n + line for line in lines[1:])


class Module:
    """Base class for all neural network modules; subclasses define ``forward``."""

    dump_patches = False
    _version = 1
    training: bool
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments "
                            f"{args or ''}{kwargs or ''}")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = {}
        d["_buffers"] = {}
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = {}
        d["_forward_pre_hooks"] = _HookODict()
        d["_forward_hooks"] = _HookODict()
        d["_backward_hooks"] = _HookODict()
        d["_state_dict_hooks"] = _HookODict()
        d["_state_dict_pre_hooks"] = _HookODict()
        d["_load_state_dict_pre_hooks"] = _HookODict()
        d["_load_state_dict_post_hooks"] = _HookODict()

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  f'"forward" function')

    # -- calling --------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args, kwargs):
        for hook in list(self._forward_pre_hooks.values()):
            if isinstance(hook, tuple):
                fn, _ = hook
                r = fn(self, args, kwargs)
                if r is not None:
                    if not (isinstance(r, tuple) and len(r) == 2):
                        raise RuntimeError(f"forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {r}.")
                    args, kwargs = r
            else:
                r = hook(self, args)
                if r is not None:
                    args = r if isinstance(r, tuple) else (r,)
        bw = None
        if self._backward_hooks:
            from ._backward_hook import BackwardHook  # start-up: ~1 ms, full backward hooks only
            bw = BackwardHook(self, list(self._backward_hooks.values()))
            args = bw.setup_input_hook(args)
        out = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            if isinstance(hook, tuple):
                fn, _ = hook
                r = fn(self, args, kwargs, out)
            else:
                r = hook(self, args, out)
            if r is not None:
                out = r
        if bw is not None:
            out = bw.setup_output_hook(out)
        return out

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """``hook(module, args)`` (or ``hook(module, args, kwargs)`` with ``with_kwargs``) before
        ``forward``; a returned value replaces the arguments."""
        if with_kwargs:
            return _add_hook(self._forward_pre_hooks, hook, prepend, with_kwargs=True)
        return _add_hook(self._forward_pre_hooks, hook, prepend)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False,
                              always_call=False):
        """``hook(module, args, output)`` (``hook(module, args, kwargs, output)`` with
        ``with_kwargs``) after ``forward``; a returned value replaces the output."""
        if with_kwargs:
            return _add_hook(self._forward_hooks, hook, prepend, with_kwargs=True)
        return _add_hook(self._forward_hooks, hook, prepend)

    def register_full_backward_hook(self, hook, prepend=False):
        """``hook(module, grad_input, grad_output)`` once the gradients with respect to the
        module's tensor inputs are known; a returned tuple replaces ``grad_input``."""
        return _add_hook(self._backward_hooks, hook, prepend)

    def register_backward_hook(self, hook):
        # PyTorch deprecates the non-full hook, whose grad_input was ill-defined; ember gives
        # it the full hook's well-defined semantics
        return self.register_full_backward_hook(hook)

    # -- registration ---------------------------------------------------------------------------
    def _check_name(self, name, what, store):
        if not isinstance(name, str):
            raise TypeError(f"{what} name should be a string. Got {type(name).__name__}")
        if name == "":
            raise KeyError(f'{what} name can\'t be empty string ""')
        if "." in name:
            raise KeyError(f'{what} name can\'t contain ".", got: {name}')
        if name not in store and hasattr(self, name):
            raise KeyError(f"attribute '{name}' already exists")

    def register_buffer(self, name, tensor, persistent=True):
        """A tensor that is state but not a parameter (running statistics); ``persistent=False``
        keeps it out of ``state_dict``."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name(name, "buffer", self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer "
                            f"'{name}' (ember Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name(name, "parameter", self._parameters)
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (ember.nn.Parameter or None required)")
        if param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                             f"parameters must be created explicitly. To express '{name}' as a "
                             f"function of another Tensor, compute the value in the forward() "
                             f"method.")
        self._parameters[name] = param

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module", self._modules)
        self._modules[name] = module

    def register_module(self, name, module):
        self.add_module(name, module)

    def get_submodule(self, target):
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            mod = mod._named_attribute(item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def set_submodule(self, target, module, strict=False):
        """Put ``module`` at the dotted path ``target``: replacing a submodule, or (unless
        ``strict``) adding one to an existing parent; torch's errors."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if hasattr(parent, name):
            if not isinstance(getattr(parent, name), Module):
                raise AttributeError(f"`{name}` is not an nn.Module")
        elif strict:
            raise AttributeError(f"{parent._get_name()} has no attribute `{name}`")
        setattr(parent, name, module)

    def _named_attribute(self, name):
        """``getattr(self, name)``, or torch's error naming this module's class."""
        if not hasattr(self, name):
            raise AttributeError(f"{self._get_name()} has no attribute `{name}`")
        return getattr(self, name)

    def get_parameter(self, target):
        mod_path, _, name = target.rpartition(".")
        p = self.get_submodule(mod_path)._named_attribute(name)
        if not isinstance(p, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return p

    def get_buffer(self, target):
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return mod._buffers[name]

    def __getattr__(self, name):
        # only reached when normal lookup fails: parameters, buffers and submodules
        d = self.__dict__
        if "_parameters" in d:
            p = d["_parameters"]
            if name in p:
                return p[name]
            b = d["_buffers"]
            if name in b:
                return b[name]
            m = d["_modules"]
            if name in m:
                return m[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            _remove_from(d, name, params)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                f"(ember.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            if params is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            _remove_from(d, name, d["_modules"])
            d["_modules"][name] = value
        elif params is not None and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module "
                                f"'{name}' (ember.nn.Module or None expected)")
            d["_modules"][name] = value
        elif isinstance(value, Buffer) or params is not None and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                f"(ember.Tensor or None expected)")
            if isinstance(value, Buffer):   # nn.Buffer says whether it is persistent
                persistent = value.persistent
            else:
                persistent = name not in d["_non_persistent_buffers_set"]
            self.register_buffer(name, value, persistent)
        else:
            object.__setattr__(self, name, value)

    def __delattr__(self, name):
        d = self.__dict__
        for key in ("_parameters", "_buffers", "_modules"):
            if name in d.get(key, ()):
                del d[key][name]
                d["_non_persistent_buffers_set"].discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = set(dir(type(self))) | set(self.__dict__)
        keys |= set(self._parameters) | set(self._buffers) | set(self._modules)
        return sorted(k for k in keys if not k[0].isdigit())

    def __setstate__(self, state):
        self.__dict__.update(state)

    # -- traversal ------------------------------------------------------------------------------
    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members(module):
                if v is None or (remove_duplicate and id(v) in memo):
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield (module_prefix + ("." if module_prefix else "") + k, v)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse,
                                   remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse,
                                   remove_duplicate)

    def children(self):
        for _, m in self.named_children():
            yield m

    def named_children(self):
        memo = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in memo:
                memo.add(id(m))
                yield name, m

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from m.named_modules(memo, sub, remove_duplicate)

    # -- modes ----------------------------------------------------------------------------------
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        zero_grads(self.parameters(), set_to_none)

    def compile(self, *args, **kwargs):
        """Compile this module's forward with ``ember.compile`` in place (``torch``'s
        ``Module.compile``)."""
        ember.compiler._module_compile(self, *args, **kwargs)

    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def share_memory(self):
        """Move every parameter and buffer to shared memory (``Tensor.share_memory_``)."""
        return self._apply(lambda t: t.share_memory_())

    # -- device and dtype -----------------------------------------------------------------------
    def _apply(self, fn, recurse=True):
        if recurse:
            for m in self.children():
                m._apply(fn)
        for key, param in self._parameters.items():
            if param is None:
                continue
            with no_grad():
                new = fn(param)
            # swap the data in place so that optimizers holding these Parameters keep working
            param.data = new
            g = param.grad
            if g is not None:
                with no_grad():
                    g.data = fn(g)
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def to(self, *args, **kwargs):
        """``to(device)``, ``to(dtype)``, ``to(tensor)``, ``to(device, dtype)``: floating-point
        and complex tensors take the dtype, every tensor moves to the device."""
        device, dtype, non_blocking, _ = _parse_to(args, dict(kwargs))
        if dtype is not None:
            dtype = _dtype.as_dtype(dtype)
            if dtype.category < _dtype.FLOATING:
                raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, "
                                f"but got desired dtype={dtype}")

        memory_format = kwargs.get("memory_format")

        def convert(t):
            cast = dtype if dtype is not None and (t.is_floating_point() or t.is_complex()) \
                else None
            # PyTorch applies memory_format to the 4-D and 5-D parameters only
            layout = memory_format if memory_format is not None and t.ndim in (4, 5) else None
            if device is None and cast is None and layout is None:
                return t
            return t.to(device, cast, non_blocking, memory_format=layout)
        return self._apply(convert)

    def to_empty(self, *, device, recurse=True):
        """The parameters and buffers moved to ``device`` without their values (uninitialised
        tensors of the same shapes and dtypes): how a module built on the meta device gets
        storage (``nn.utils.skip_init``)."""
        return self._apply(lambda t: ember.empty_like(t, device=device), recurse=recurse)

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def type(self, dst_type):
        return self._apply(lambda t: t.type(dst_type))

    def _float_cast(self, dtype):
        return self._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)

    def float(self):
        return self._float_cast(_dtype.float32)

    def double(self):
        return self._float_cast(_dtype.float64)

    def half(self):
        return self._float_cast(_dtype.float16)

    def bfloat16(self):
        return self._float_cast(_dtype.bfloat16)

    # -- state_dict -----------------------------------------------------------------------------
    # a subclass that overrides both keeps non-tensor state under "<prefix>_extra_state"
    def get_extra_state(self):
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be "
                           "called: a module stores extra state by overriding get_extra_state "
                           "and set_extra_state.")

    def set_extra_state(self, state):
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be "
                           "called: a module stores extra state by overriding get_extra_state "
                           "and set_extra_state.")

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An OrderedDict of parameters and persistent buffers under PyTorch's dotted names."""
        if args:  # PyTorch's deprecated positional form (destination, prefix, keep_vars)
            names = ("destination", "prefix", "keep_vars")
            vals = dict(zip(names, args))
            destination = vals.get("destination", destination)
            prefix = vals.get("prefix", prefix)
            keep_vars = vals.get("keep_vars", keep_vars)
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        meta = getattr(destination, "_metadata", None)
        if meta is not None:
            meta[prefix[:-1]] = {"version": self._version}
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".",
                             keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            r = hook(self, destination, prefix, {"version": self._version})
            if r is not None:
                destination = r
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs, assign=False):
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)
        persistent = {k: v for k, v in self._buffers.items()
                      if k not in self._non_persistent_buffers_set}
        local = {k: v for k, v in itertools.chain(self._parameters.items(), persistent.items())
                 if v is not None}
        for name, param in local.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected '
                                  f'ember.Tensor or Tensor-like object from checkpoint but '
                                  f'received {type(value)}')
                continue
            if value.shape != param.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{value.shape} from checkpoint, the shape in current model "
                                  f"is {param.shape}.")
                continue
            try:
                with no_grad():
                    if assign:
                        if isinstance(param, Parameter):
                            new = value if isinstance(value, Parameter) else \
                                Parameter(value, param.requires_grad)
                            self._parameters[name] = new
                        else:
                            self._buffers[name] = value
                    else:
                        param.copy_(value)
            except Exception as e:  # noqa: BLE001 - reported like PyTorch, with the key
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions '
                                  f'in the model are {param.shape} and whose dimensions in the '
                                  f'checkpoint are {value.shape}, an exception occurred : '
                                  f'{e.args}.')
        extra_key = prefix + _EXTRA_STATE
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:
            for key in state_dict.keys():
                if key.startswith(prefix) and key != extra_key:
                    rest = key[len(prefix):]
                    head = rest.split(".", 1)[0]
                    if head not in self._modules and head not in local:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy parameters and buffers from ``state_dict``; with ``strict``, missing or
        unexpected keys raise. Returns ``(missing_keys, unexpected_keys)``."""
        if not isinstance(state_dict, dict):
            raise TypeError(f"{type(self).__name__}.load_state_dict(): Expected state_dict to be "
                            f"dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)

        def load(module, prefix=""):
            local_meta = {} if metadata is None else metadata.get(prefix[:-1], {})
            module._load_from_state_dict(state_dict, prefix, local_meta, True, missing,
                                         unexpected, errors, assign)
            for name, child in module._modules.items():
                if child is not None:
                    load(child, prefix + name + ".")
            result = _IncompatibleKeys(missing, unexpected)
            for hook in module._load_state_dict_post_hooks.values():
                hook(module, result)
        load(self)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
        if errors:
            name = type(self).__name__
            # PyTorch's text, after the public call that failed
            raise RuntimeError("{}.load_state_dict: Error(s) in loading state_dict for {}:\n\t{}"
                               .format(name, name, "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)

    def register_state_dict_pre_hook(self, hook):
        return _add_hook(self._state_dict_pre_hooks, hook)

    def _register_state_dict_hook(self, hook):
        return _add_hook(self._state_dict_hooks, hook)

    register_state_dict_post_hook = _register_state_dict_hook

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        if with_module:
            def bound(*args, _hook=hook):
                return _hook(self, *args)
            return _add_hook(self._load_state_dict_pre_hooks, bound)
        return _add_hook(self._load_state_dict_pre_hooks, hook)

    def register_load_state_dict_pre_hook(self, hook):
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook):
        return _add_hook(self._load_state_dict_post_hooks, hook)

    # -- printing -------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        extra = self.extra_repr()
        lines = extra.split("\n") if extra else []
        for key, m in self._modules.items():
            lines.append("(" + key + "): " + _addindent(repr(m), 2))
        main = self._get_name() + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


def _remove_from(d, name, keep):
    for key in ("_parameters", "_buffers", "_modules"):
        store = d.get(key)
        if store is not None and store is not keep and name in store:
            del store[name]
            if key == "_buffers":
                d["_non_persistent_buffers_set"].discard(name)
    d.pop(name, None)


def _device_method(name):
    def move(self, device=None):
        target = name if device is None else (
            f"{name}:{device}" if isinstance(device, int) else device)
        return self._apply(lambda t: t.to(target))
    move.__name__ = name
    move.__doc__ = f"Move every parameter and buffer to the {name} device (in place)."
    return move


def _announce_backend(name):
    """``Module.<backend>()`` for every backend name, like ``Tensor.<backend>()``."""
    if not hasattr(Module, name):
        setattr(Module, name, _device_method(name))


def _install_device_methods():
    registry.on_new_name(_announce_backend)


_install_device_methods()
