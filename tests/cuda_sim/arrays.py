"""Device arrays of the simulated GPU: numpy memory that behaves as cupy's where it matters.

``DeviceArray`` is a numpy subclass whose operations (ufuncs, numpy functions through NEP 18,
indexing and the computing methods) go through ``_op``, which for each one:

* issues the work on the current stream (``clock.py``) and reads every operand as that stream
  sees it: memory written by work the stream does not know about, or under work that reused it,
  reads as poison (NaN, 0x5A bytes) -- a missing synchronization gives wrong data;
* checks device affinity: an operand on another simulated device raises cupy's ValueError for
  devices without peer access;
* refuses host numpy arrays as operands, as cupy's kernels do (``TypeError: Unsupported type``);
* wraps out-of-range integer indices as cupy does (indexing, take, take_along_axis, put,
  ufunc.at), so a kernel whose bounds guard is missing or deferred runs on instead of raising;
* returns 0-d arrays where numpy returns scalars (cupy never hands back a host scalar);
* places results in memory from the thread's allocator when one is installed (cupy's
  ``using_allocator``), so a block reused too early under work still reading it is seen.

Reading a value on the host (``bool``, ``int``, ``float``, ``item``, ``tolist``) is a counted
host synchronization. Memory is tracked per ``Block`` (one allocation or pool block): its last
write (stamp), the streams that read it since, and a pending upload (an H2D copy issued but not
yet known to have happened, applied when someone that knows of it looks).
"""
from __future__ import annotations

import ctypes

import numpy as np

from .rules import (_INDEXED, _METADATA, _SIZE_FROM_VALUES, _VIEW_FUNCTIONS, _WRITES_FIRST,
                    _basic, _all_ints, _is_int_array, _no_float_atomics, _wrap_index_argument,
                    host_bytes, wrap_key)

_POISON_BYTE = 0x5A


class Block:
    """Device memory: where it lives and who wrote and read it when."""

    __slots__ = ("sim", "device", "write", "reads", "poisoned", "upload", "__weakref__")

    def __init__(self, sim, device):
        self.sim, self.device = sim, device
        self.write = None        # stamp of the last write
        self.reads = {}          # stream id -> last sequence number that read it
        self.poisoned = False    # two writes raced: contents undefined
        self.upload = None       # (stamp, fn): a host-to-device copy not applied yet

    def corrupt(self) -> bool:
        if self.poisoned:
            return True
        w = self.write
        return w is not None and self.sim.streams[w[0]].corrupt_from <= w[1]

    def materialize(self, clock) -> None:
        """Apply a pending upload if ``clock`` knows it was issued (the copy has run by the
        time anyone ordered after it looks)."""
        up = self.upload
        if up is not None and clock.sees(up[0]):
            self.upload = None
            up[1]()

    def readable_by(self, clock) -> bool:
        if self.upload is not None:
            return False           # the copy's destination is still being written
        return clock.sees(self.write) and not self.corrupt()

    def note_read(self, stream) -> None:
        if self.reads.get(stream.id, 0) < stream.seq:
            self.reads[stream.id] = stream.seq

    def written(self, stream, stamp) -> None:
        """``stream`` writes (at ``stamp``): reads and writes it does not know about race."""
        clock = stream.clock
        for sid, seq in self.reads.items():
            if sid != stream.id and not clock.sees((sid, seq)):
                other = self.sim.streams[sid]
                other.corrupt_from = min(other.corrupt_from, seq)
        w = self.write
        if w is not None and w[0] != stream.id and not clock.sees(w):
            self.poisoned = True
        if self.upload is not None and not clock.sees(self.upload[0]):
            self.poisoned = True
        self.upload = None
        self.write = stamp
        self.reads = {}


class Memory:
    """Marks the bytes of one allocation from the installed allocator: a ctypes buffer over the
    pool block's memory (``memory_over``) that keeps the allocation's pointer alive. Arrays are
    made over it with ``np.frombuffer``, so every view holds it (numpy collapses chains of
    ndarray bases, but stops at an object that is not an array)."""
    pointer = None


_memory_types = {}


def memory_over(buf, size, pointer):
    t = _memory_types.get(size)
    if t is None:
        t = _memory_types[size] = type(f"DeviceBytes{size}", (ctypes.c_ubyte * size, Memory),
                                       {})
    m = t.from_address(buf.ctypes.data)
    m.pointer = pointer
    return m


def poison_like(a):
    p = np.empty(a.shape, dtype=a.dtype)
    if a.dtype.kind in "fc" or a.dtype.name == "bfloat16":
        p[...] = np.nan
    else:
        p.view(np.uint8)[...] = _POISON_BYTE
    return p


def root_of(a):
    """The object that owns ``a``'s memory (walks ``.base``)."""
    o = a
    while True:
        if isinstance(o, Memory):
            return o
        b = getattr(o, "base", None)
        if b is None:
            return o
        o = b


class DeviceArray(np.ndarray):
    """A cupy array on a simulated device (see the module docstring)."""

    _blk = None

    def __array_finalize__(self, obj):
        # a view shares its source's memory record; new memory made by a numpy method the
        # simulator does not intercept gets a record of its own on the current device
        src = getattr(obj, "_blk", None)
        if src is None:
            return
        if self.base is not None:
            self._blk = src
        else:
            self._blk = Block(src.sim, src.sim.current_device())

    # -- NEP 13 / 18 --------------------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        sim = _sim_of(inputs, kwargs)
        return sim.arrays.ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        sim = _sim_of(args, kwargs)
        return sim.arrays.function(func, args, kwargs)

    # -- indexing -----------------------------------------------------------------------------------
    def __getitem__(self, key):
        return self._blk.sim.arrays.getitem(self, key)

    def __setitem__(self, key, value):
        self._blk.sim.arrays.setitem(self, key, value)

    # -- host reads: synchronizations ---------------------------------------------------------------
    def _host(self, what):
        return self._blk.sim.arrays.to_host(self, what)

    def __bool__(self):
        return bool(self._host("bool(array)"))

    def __int__(self):
        return int(self._host("int(array)"))

    def __float__(self):
        return float(self._host("float(array)"))

    def __complex__(self):
        return complex(self._host("complex(array)"))

    def __index__(self):
        return self._host("operator.index(array)").__index__()

    def item(self, *args):
        return self._host("array.item()").item(*args)

    def tolist(self):
        return self._host("array.tolist()").tolist()

    def tobytes(self, order="C"):
        return self._host("array.tobytes()").tobytes(order)

    def __repr__(self):
        return f"sim_array({np.ndarray.__repr__(self._host('repr(array)'))})"

    __str__ = __repr__

    def __reduce__(self):
        raise TypeError("a simulated device array is not picklable (cupy arrays pickle by "
                        "copying to the host; ember never pickles device memory)")

    def get(self, stream=None, order="C", out=None, blocking=True):
        return self._blk.sim.api.to_host(self, out=out, stream=stream, blocking=blocking)


def _computing_method(name):
    def method(self, *args, **kwargs):
        return self._blk.sim.arrays.method(self, name, args, kwargs)
    method.__name__ = name
    return method


# numpy methods implemented in C that read values (ufunc-backed ones like sum, max, any, clip
# reach __array_ufunc__ by themselves); in-place ones are listed in _WRITING
_METHODS = ("astype", "copy", "argmax", "argmin", "argsort", "nonzero", "cumsum", "cumprod",
            "take", "repeat", "searchsorted", "dot", "round", "flatten", "trace", "compress",
            "choose", "partition", "argpartition", "sort", "fill", "put")
_WRITING = frozenset({"sort", "fill", "put", "partition"})
for _name in _METHODS:
    setattr(DeviceArray, _name, _computing_method(_name))


def _sim_of(args, kwargs):
    for a in _arrays_in(args):
        return a._blk.sim
    for a in _arrays_in(tuple(kwargs.values())):
        return a._blk.sim
    raise AssertionError("no device array among the operands")


def _arrays_in(obj):
    if isinstance(obj, DeviceArray):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            yield from _arrays_in(x)


def _quiet(fn):
    """cupy never warns on IEEE special values (log(0), 0/0): neither does the simulator."""
    def run(*args, **kwargs):
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)
    run.__name__ = fn.__name__
    return run


class ArrayOps:
    """The operations of one simulator's arrays (``sim.arrays``)."""

    def __init__(self, sim, api, checker):
        self.sim, self.api = sim, api
        self.check = checker      # (numpy function) -> None, or raise as cupy would

    # -- memory -------------------------------------------------------------------------------------
    def block(self, a) -> Block:
        blk = a._blk
        if blk is None:
            blk = a._blk = Block(self.sim, self.sim.current_device())
        return blk

    def _affine(self, blk) -> None:
        dev = self.sim.current_device()
        if blk.device != dev:
            raise ValueError(f"The device where the array resides ({blk.device}) is different "
                             f"from the current device ({dev}). Peer access is unavailable "
                             f"between these devices.")

    def check_readable(self, a, stream, affine=True) -> bool:
        """Whether ``stream`` can know ``a``'s contents (records the read)."""
        blk = self.block(a)
        if affine:
            self._affine(blk)
        blk.materialize(stream.clock)
        ok = blk.readable_by(stream.clock)
        blk.note_read(stream)
        return ok

    def readable(self, a, stream, affine=True):
        """``a``'s values as ``stream`` sees them (a plain array; poison if it cannot know)."""
        plain = a.view(np.ndarray)
        return plain if self.check_readable(a, stream, affine) else poison_like(plain)

    def writable(self, a, stream, stamp, affine=True):
        blk = self.block(a)
        if affine:
            self._affine(blk)
        blk.materialize(stream.clock)
        blk.written(stream, stamp)
        return a.view(np.ndarray)

    def adopt(self, r, stream, stamp, sources=()):
        """A numpy result as a device array: a view when it shares a source's memory, else
        new memory (from the installed allocator) written at ``stamp``."""
        if isinstance(r, DeviceArray):
            return r
        if isinstance(r, np.generic):
            r = np.asarray(r)
        if not isinstance(r, np.ndarray):
            return r
        if r.base is not None and sources:
            root = root_of(r)
            for src_root, src in sources:
                if root is src_root:
                    v = r.view(DeviceArray)
                    v._blk = src._blk
                    return v
        return self.new(r, stream, stamp)

    def new(self, values, stream, stamp):
        sim = self.sim
        alloc = sim.state.allocator
        nbytes = values.nbytes
        if alloc is not None and nbytes:
            ptr = alloc(nbytes)
            pooled = ptr.mem
            mem = memory_over(pooled.buf, pooled.mem.size, ptr)
            out = np.frombuffer(mem, dtype=np.uint8, count=nbytes).view(values.dtype)
            out = out.reshape(values.shape).view(DeviceArray)
            blk = pooled.block
            blk.device = sim.current_device()
            blk.poisoned = False      # a new allocation; written() sees races with the last one
            blk.written(stream, stamp)
            out._blk = blk
            np.copyto(out.view(np.ndarray), values, casting="unsafe")
            return out
        out = np.array(values, copy=True, order="C", subok=False).view(DeviceArray)
        blk = out._blk = Block(sim, sim.current_device())
        blk.written(stream, stamp)
        return out

    def upload(self, host, stream, stamp, late):
        """A new device array filled from host memory by a copy issued at ``stamp``; ``late``:
        the copy reads the host memory when it runs (pinned, non-blocking), not now."""
        out = self.new(np.empty(host.shape, host.dtype), stream, stamp)
        plain = out.view(np.ndarray)
        if late and host.size:
            # a DMA reads the bytes at the address when it runs; it holds no reference to the
            # host array (which may be freed and its memory reused meanwhile)
            source = host_bytes(host)
            blk = out._blk
            blk.upload = (stamp, lambda: np.copyto(plain.reshape(-1).view(np.uint8), source()))
            self.sim.pending_uploads.append(blk)
        else:
            np.copyto(plain, host)
        return out

    def to_host(self, a, what):
        """A value read: the host waits for the current stream, then reads."""
        return self.to_host_on(a, self.sim.current_stream(self.block(a).device), what)

    def to_host_on(self, a, stream, what):
        """A blocking copy to the host on ``stream`` (which the host then waits for)."""
        sim = self.sim
        stream.issue()
        sim.host_sync(what, stream.device_id, stream.clock, stream)
        blk = self.block(a)
        blk.materialize(sim.host_clock)
        plain = a.view(np.ndarray)
        return plain.copy() if blk.readable_by(sim.host_clock) else poison_like(plain)

    # -- operations -------------------------------------------------------------------------------
    def _prepare(self, obj, stream, roots, writes=False, stamp=None):
        """Operands as plain arrays for numpy (recursing into lists and tuples)."""
        if isinstance(obj, DeviceArray):
            roots.append((root_of(obj.view(np.ndarray)), obj))
            if writes:
                return self.writable(obj, stream, stamp)
            return self.readable(obj, stream)
        if isinstance(obj, np.ndarray):
            raise TypeError(f"Unsupported type {type(obj)} (a host numpy array given to a cupy "
                            f"kernel; upload it with xp.asarray first)")
        if isinstance(obj, (list, tuple)) and any(isinstance(x, (np.ndarray, list, tuple))
                                                  for x in obj):
            return type(obj)(self._prepare(x, stream, roots) for x in obj)
        return obj

    def _wrap_results(self, r, stream, stamp, roots):
        if isinstance(r, tuple) and not hasattr(r, "_fields"):
            return tuple(self._wrap_results(x, stream, stamp, roots) for x in r)
        if isinstance(r, list):
            return [self._wrap_results(x, stream, stamp, roots) for x in r]
        if hasattr(r, "_fields"):  # numpy's named tuples (unique_all, eigh's result)
            return type(r)(*(self._wrap_results(x, stream, stamp, roots) for x in r))
        return self.adopt(r, stream, stamp, roots)

    @_quiet
    def ufunc(self, ufunc, method, inputs, kwargs):
        self.check(ufunc, method)
        stream = self.sim.current_stream()
        stamp = stream.issue()
        roots = []
        if method == "at":
            target, index = inputs[0], inputs[1]
            if ufunc is np.add:
                _no_float_atomics("add.at", target.dtype)
            rest = [self._prepare(x, stream, roots) for x in inputs[2:]]
            index = self._prepare(index, stream, roots)
            index = wrap_key(target.shape, index)
            plain = self.writable(target, stream, stamp)
            before = plain.copy() if ufunc is np.maximum and plain.dtype == np.float64 else None
            getattr(ufunc, "at")(plain, index, *rest)
            if before is not None:
                # seen on an H200 (cupy 14.2): maximum.at into a float64 target left the values
                # it wrote rounded to float32
                written = plain != before
                plain[written] = plain[written].astype(np.float32)
            return None
        out = kwargs.get("out")
        if out is not None:
            outs = out if isinstance(out, tuple) else (out,)
            kwargs = dict(kwargs, out=tuple(self._prepare(o, stream, roots, True, stamp)
                                            if isinstance(o, DeviceArray) else o for o in outs))
        args = [self._prepare(x, stream, roots) for x in inputs]
        r = getattr(ufunc, method)(*args, **kwargs)
        if out is not None:
            return out[0] if isinstance(out, tuple) and len(out) == 1 else out
        return self._wrap_results(r, stream, stamp, roots)

    @_quiet
    def function(self, func, args, kwargs):
        """A numpy function on device arrays (through ``xp`` or NEP 18)."""
        name = getattr(func, "__name__", "")
        if name in _METADATA:
            return func(*_plain(args), **dict(zip(kwargs, _plain(tuple(kwargs.values())))))
        stream = self.sim.current_stream()
        stamp = stream.issue()
        roots = []
        if name in _VIEW_FUNCTIONS:
            return self._viewing(func, args, kwargs, stream, stamp)
        out = kwargs.get("out")
        if isinstance(out, DeviceArray):
            kwargs = dict(kwargs, out=self._prepare(out, stream, roots, True, stamp))
        writes_first = name in _WRITES_FIRST and args and isinstance(args[0], DeviceArray)
        args = [self._prepare(x, stream, roots, writes_first and i == 0, stamp)
                for i, x in enumerate(args)]
        kwargs = {k: (v if k == "out" else self._prepare(v, stream, roots))
                  for k, v in kwargs.items()}
        if name in _INDEXED and len(args) > 1:
            _wrap_index_argument(name, args, kwargs)
        if name == "bincount":
            weights = kwargs.get("weights", args[1] if len(args) > 1 else None)
            if weights is not None:
                _no_float_atomics("bincount", np.asarray(weights).dtype)
        if name in _SIZE_FROM_VALUES or (name == "where" and len(args) == 1):
            self.sim.count_sync(f"cupy.{name} (its output size is read back)")
        r = func(*args, **kwargs)
        if out is not None:
            return out
        if name in _WRITES_FIRST:
            return r
        return self._wrap_results(r, stream, stamp, roots)

    def _viewing(self, func, args, kwargs, stream, stamp):
        """Functions that return views where they can (reshape, broadcast_to, ...): computed on
        the operands' own memory; a copy they make reads it (poison if it cannot be read)."""
        roots, ok = [], True
        for a in _arrays_in((args, tuple(kwargs.values()))):
            blk = self.block(a)
            self._affine(blk)
            blk.materialize(stream.clock)
            ok = ok and blk.readable_by(stream.clock)
            blk.note_read(stream)
            roots.append((root_of(a.view(np.ndarray)), a))
        r = func(*_plain(args), **dict(zip(kwargs, _plain(tuple(kwargs.values())))))

        def adopt(x):
            if isinstance(x, np.ndarray) and not isinstance(x, DeviceArray):
                root = root_of(x)
                if not any(root is src_root for src_root, _ in roots) and not ok:
                    x = poison_like(x)
            return self.adopt(x, stream, stamp, roots)
        if isinstance(r, (tuple, list)):
            return type(r)(adopt(x) for x in r)
        return adopt(r)

    @_quiet
    def method(self, a, name, args, kwargs):
        stream = self.sim.current_stream()
        stamp = stream.issue()
        roots = []
        if name in _WRITING:
            plain = self._prepare(a, stream, roots, True, stamp)
        else:
            plain = self._prepare(a, stream, roots)
        if name in ("nonzero", "compress"):
            self.sim.count_sync(f"ndarray.{name} (its output size is read back)")
        args = [self._prepare(x, stream, roots) for x in args]
        if name in ("take", "put", "choose", "compress") and args and name != "compress":
            n = plain.size if name != "take" or len(args) < 2 or args[1] is None \
                else plain.shape[args[1]]
            idx = np.asarray(args[0])
            if _is_int_array(idx) and n:
                args[0] = np.mod(idx, n)
        r = getattr(np.ndarray, name)(plain, *args, **kwargs)
        if name in _WRITING:
            return r
        return self._wrap_results(r, stream, stamp, roots)

    @_quiet
    def getitem(self, a, key):
        if _basic(key):
            if _all_ints(key, a.ndim):   # a 0-d view, as cupy returns
                key = (key if isinstance(key, tuple) else (key,)) + (Ellipsis,)
            r = np.ndarray.__getitem__(a, key)
            if isinstance(r, DeviceArray) and r._blk is None:
                r._blk = self.block(a)
            return r
        stream = self.sim.current_stream()
        stamp = stream.issue()
        roots = []
        plain = self._prepare(a, stream, roots)
        key = wrap_key(a.shape, self._prepare(key, stream, roots))
        if any(isinstance(k, np.ndarray) and k.dtype == bool
               for k in (key if isinstance(key, tuple) else (key,))):
            self.sim.count_sync("boolean-mask indexing (its output size is read back)")
        r = np.ndarray.__getitem__(plain, key)
        return self._wrap_results(r, stream, stamp, roots)

    @_quiet
    def setitem(self, a, key, value):
        stream = self.sim.current_stream()
        stamp = stream.issue()
        roots = []
        if isinstance(value, DeviceArray):
            value = self.readable(value, stream)
        if not _basic(key):
            key = wrap_key(a.shape, self._prepare(key, stream, roots))
        plain = self.writable(a, stream, stamp)
        np.ndarray.__setitem__(plain, key, value)


def _plain(obj):
    if isinstance(obj, DeviceArray):
        return obj.view(np.ndarray)
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return type(obj)(_plain(x) for x in obj)
    return obj
