"""Helpers shared by the built-in pipes: argument checks, file walking, ``StreamWrapper``."""
from __future__ import annotations

import fnmatch
import functools
import inspect
import os
import warnings
from collections.abc import Iterable, Sized
from io import IOBase
from ....._warn import user_stacklevel

__all__ = ["StreamWrapper", "get_file_binaries_from_pathnames", "get_file_pathnames_from_root",
           "match_masks", "validate_input_col", "validate_pathname_binary_tuple"]


def _fn_name(fn) -> str:
    if isinstance(fn, functools.partial):
        fn = fn.func
    return getattr(fn, "__name__", repr(fn))


def validate_input_col(fn, input_col) -> None:
    """Check that ``fn`` can take the columns ``input_col`` selects, before any data flows."""
    try:
        sig = inspect.signature(fn)
    except (ValueError, TypeError):  # a builtin without a signature: nothing to check
        return
    size = len(input_col) if isinstance(input_col, (list, tuple)) else 1
    positional, var_positional, required_kw_only = [], False, []
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            positional.append(p)
        elif p.kind is p.VAR_POSITIONAL:
            var_positional = True
        elif p.kind is p.KEYWORD_ONLY and p.default is p.empty:
            required_kw_only.append(p)
    name = _fn_name(fn)
    if required_kw_only:
        raise ValueError(f"The function {name} takes {len(required_kw_only)} non-default "
                         f"keyword-only parameters, which is not allowed.")
    if len(sig.parameters) < size:
        if not var_positional:
            raise ValueError(f"The function {name} takes {len(sig.parameters)} parameters, but "
                             f"{size} are required.")
    elif len(positional) > size:
        if any(p.default is p.empty for p in positional[size:]):
            raise ValueError(f"The function {name} takes {len(positional)} positional "
                             f"parameters, but {size} are required.")
    elif len(positional) < size and not var_positional:
        raise ValueError(f"The function {name} takes {len(positional)} positional parameters, "
                         f"but {size} are required.")


def _is_local_fn(fn) -> bool:
    if hasattr(fn, "__code__"):
        return bool(fn.__code__.co_flags & inspect.CO_NESTED)
    qualname = getattr(fn, "__qualname__", None) or getattr(type(fn), "__qualname__", "")
    return "<locals>" in qualname


def _check_unpickable_fn(fn) -> None:
    """Refuse a non-callable; warn (as torch does) about callables pickle cannot send."""
    if not callable(fn):
        raise TypeError(f"A callable function is expected, but {type(fn)} is provided.")
    if isinstance(fn, functools.partial):
        fn = fn.func
    if _is_local_fn(fn):
        warnings.warn("Local function is not supported by pickle, please use regular python "
                      "function or functools.partial instead.", stacklevel=user_stacklevel())
    elif getattr(fn, "__name__", None) == "<lambda>":
        warnings.warn("Lambda function is not supported by pickle, please use regular python "
                      "function or functools.partial instead.", stacklevel=user_stacklevel())


def call_on_columns(fn, data, input_col):
    """``fn`` of the item, or of the column ``input_col`` names (of each, for a list of them)."""
    if input_col is None:
        return fn(data)
    if isinstance(input_col, (list, tuple)):
        return fn(*(data[col] for col in input_col))
    return fn(data[input_col])


def apply_to_columns(fn, data, input_col, output_col):
    """torch's ``input_col``/``output_col`` rule, shared by map-like pipes."""
    result = call_on_columns(fn, data, input_col)
    if input_col is None and output_col is None:
        return result
    was_tuple = isinstance(data, tuple)
    if was_tuple:
        data = list(data)
    if output_col is None:
        if isinstance(input_col, (list, tuple)):
            data[input_col[0]] = result
            for idx in sorted(input_col[1:], reverse=True):
                del data[idx]
        else:
            data[input_col] = result
    elif output_col == -1:
        data.append(result)
    else:
        data[output_col] = result
    return tuple(data) if was_tuple else data


def check_columns(fn, input_col, output_col):
    """Validate ``input_col``/``output_col``; returns the normalised ``output_col``."""
    if input_col is None and output_col is not None:
        raise ValueError("`output_col` must be None when `input_col` is None.")
    if isinstance(output_col, (list, tuple)):
        if len(output_col) > 1:
            raise ValueError("`output_col` must be a single-element list or tuple")
        output_col = output_col[0]
    validate_input_col(fn, input_col)
    return output_col


def unzip_columns(sequence_length, columns_to_skip, who):
    """The positions ``unzip`` keeps, with torch's errors for impossible requests."""
    if sequence_length < 1:
        raise ValueError(f"Expected `sequence_length` larger than 0, but {sequence_length} is "
                         f"found")
    skip = set(columns_to_skip or ())
    columns = [i for i in range(sequence_length) if i not in skip]
    if not columns:
        raise ValueError(f"All instances are being filtered out in {who}. Please check the "
                         f"input `sequence_length` and `columns_to_skip`.")
    return columns


def source_length(pipe, source) -> int:
    """``len`` of a pipe that yields as many items as ``source`` (its datapipe or sampler)."""
    if isinstance(source, Sized):
        return len(source)
    raise TypeError(f"{type(pipe).__name__} instance doesn't have valid length")


def declared_length(pipe) -> int:
    """``len`` of a pipe built with ``length=`` (-1, the default: no valid length)."""
    if pipe.length == -1:
        raise TypeError(f"{type(pipe).__name__} instance doesn't have valid length")
    return pipe.length


def match_masks(name: str, masks) -> bool:
    if not masks:
        return True
    if isinstance(masks, str):
        return fnmatch.fnmatch(name, masks)
    return any(fnmatch.fnmatch(name, mask) for mask in masks)


def get_file_pathnames_from_root(root, masks, recursive=False, abspath=False,
                                 non_deterministic=False):
    if not os.path.exists(root):
        raise FileNotFoundError(2, "FileLister: no such file or directory", root)
    if os.path.isfile(root):
        path = os.path.abspath(root) if abspath else root
        if match_masks(os.path.basename(path), masks):
            yield path
        return

    def onerror(err):
        raise err

    for path, dirs, files in os.walk(root, onerror=onerror):
        if abspath:
            path = os.path.abspath(path)
        if not non_deterministic:
            files.sort()
            dirs.sort()
        for f in files:
            if match_masks(f, masks):
                yield os.path.join(path, f)
        if not recursive:
            break


def get_file_binaries_from_pathnames(pathnames, mode, encoding=None):
    if isinstance(pathnames, str) or not isinstance(pathnames, Iterable):
        pathnames = [pathnames]
    if mode in ("b", "t"):
        mode = "r" + mode
    for pathname in pathnames:
        if not isinstance(pathname, (str, os.PathLike)):
            raise TypeError(f"Expected string type for pathname, but got {type(pathname)}")
        yield pathname, StreamWrapper(open(pathname, mode, encoding=encoding))  # noqa: SIM115


def validate_pathname_binary_tuple(data) -> None:
    if not isinstance(data, tuple):
        raise TypeError(f"pathname binary data should be tuple type, but it is type {type(data)}")
    if len(data) != 2:
        raise TypeError(f"pathname binary stream tuple length should be 2, but got {len(data)}")
    if not isinstance(data[0], str):
        raise TypeError(f"pathname within the tuple should have string type pathname, but it is "
                        f"type {type(data[0])}")
    if not isinstance(data[1], (IOBase, StreamWrapper)):
        raise TypeError(f"binary stream within the tuple should have IOBase or its subclasses as "
                        f"type, but it is type {type(data[1])}")


class StreamWrapper:
    """A file object that closes itself when collected; attribute access goes to the file.

    File pipes yield ``(path, StreamWrapper)`` pairs. A wrapper made from a parent stream (an
    archive member) counts as the parent's child, and ``parent.autoclose()`` closes the parent
    once its last child is closed.
    """

    session_streams: dict = {}
    debug_unclosed_streams: bool = False

    def __init__(self, file_obj, parent_stream=None, name=None) -> None:
        self.file_obj = file_obj
        self.child_counter = 0
        self.parent_stream = parent_stream
        self.close_on_last_child = False
        self.name = name
        self.closed = False
        if parent_stream is not None:
            if not isinstance(parent_stream, StreamWrapper):
                raise RuntimeError(f"Parent stream should be StreamWrapper, "
                                   f"{type(parent_stream)} was given")
            parent_stream.child_counter += 1
        if StreamWrapper.debug_unclosed_streams:
            StreamWrapper.session_streams[self] = 1

    @classmethod
    def close_streams(cls, v, depth=0) -> None:
        """Close every StreamWrapper found in ``v`` (nested dicts/lists/tuples), best effort."""
        if depth > 10:
            return
        if isinstance(v, StreamWrapper):
            v.close()
        elif isinstance(v, dict):
            for vv in v.values():
                cls.close_streams(vv, depth + 1)
        elif isinstance(v, (list, tuple)):
            for vv in v:
                cls.close_streams(vv, depth + 1)

    def __getattr__(self, name):
        return getattr(self.__dict__["file_obj"], name)

    def close(self, *args, **kwargs) -> None:
        if self.closed:
            return
        if StreamWrapper.debug_unclosed_streams:
            StreamWrapper.session_streams.pop(self, None)
        parent = self.__dict__.get("parent_stream")
        if parent is not None:
            parent.child_counter -= 1
            if not parent.child_counter and parent.close_on_last_child:
                parent.close()
        try:
            self.file_obj.close(*args, **kwargs)
        except AttributeError:
            pass
        self.closed = True

    def autoclose(self) -> None:
        self.close_on_last_child = True
        if self.child_counter == 0:
            self.close()

    def __dir__(self):
        return list(set(list(self.__dict__) + list(StreamWrapper.__dict__) + dir(self.file_obj)))

    def __del__(self) -> None:
        if not self.__dict__.get("closed", True):
            self.close()

    def __iter__(self):
        yield from self.file_obj

    def __next__(self):
        return next(self.file_obj)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self) -> str:
        if self.name is None:
            return f"StreamWrapper<{self.file_obj!r}>"
        return f"StreamWrapper<{self.name},{self.file_obj!r}>"

    def __getstate__(self):
        return self.file_obj

    def __setstate__(self, obj):
        self.__dict__.update(file_obj=obj, child_counter=0, parent_stream=None,
                             close_on_last_child=False, name=None, closed=False)
