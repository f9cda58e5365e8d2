"""Files: list_files, open_files, read_from_stream, save_to_disk, check_hash."""
from __future__ import annotations

import hashlib
import os

from .._decorator import functional_datapipe
from ..datapipe import IterDataPipe
from ..utils.common import (StreamWrapper, _check_unpickable_fn, declared_length,
                            get_file_binaries_from_pathnames, get_file_pathnames_from_root)
from .util import IterableWrapperIterDataPipe

__all__ = ["FileListerIterDataPipe", "FileOpenerIterDataPipe", "HashCheckerIterDataPipe",
           "SaverIterDataPipe", "StreamReaderIterDataPipe"]


@functional_datapipe("list_files")
class FileListerIterDataPipe(IterDataPipe):
    """Paths of the files under ``root`` (a path, paths, or a pipe of paths) that match
    ``masks`` (glob patterns); sorted unless ``non_deterministic``."""

    def __init__(self, root=".", masks="", *, recursive: bool = False, abspath: bool = False,
                 non_deterministic: bool = False, length: int = -1) -> None:
        super().__init__()
        if isinstance(root, (str, os.PathLike)):
            root = [os.fspath(root)]
        if not isinstance(root, IterDataPipe):
            root = IterableWrapperIterDataPipe(root)
        self.datapipe = root
        self.masks = masks
        self.recursive = recursive
        self.abspath = abspath
        self.non_deterministic = non_deterministic
        self.length = length

    def __iter__(self):
        for path in self.datapipe:
            yield from get_file_pathnames_from_root(path, self.masks, self.recursive,
                                                    self.abspath, self.non_deterministic)

    def __len__(self):
        return declared_length(self)


@functional_datapipe("open_files")
class FileOpenerIterDataPipe(IterDataPipe):
    """``(path, stream)`` for each path; ``mode`` is 'r'/'rt'/'t' (text) or 'rb'/'b'.

    Streams are ``StreamWrapper``s that close when collected; a missing file raises
    ``FileNotFoundError`` naming it when the pipe reaches it.
    """

    def __init__(self, datapipe, mode: str = "r", encoding=None, length: int = -1) -> None:
        super().__init__()
        if mode not in ("b", "t", "rb", "rt", "r"):
            raise ValueError(f"Invalid mode {mode}")
        if "b" in mode and encoding is not None:
            raise ValueError("binary mode doesn't take an encoding argument")
        self.datapipe = datapipe
        self.mode = mode
        self.encoding = encoding
        self.length = length

    def __iter__(self):
        yield from get_file_binaries_from_pathnames(self.datapipe, self.mode, self.encoding)

    def __len__(self):
        return declared_length(self)


@functional_datapipe("read_from_stream")
class StreamReaderIterDataPipe(IterDataPipe):
    """``(path, data)``: the whole stream, or ``chunk``-sized pieces; closes the stream."""

    def __init__(self, datapipe, chunk=None) -> None:
        self.datapipe = datapipe
        self.chunk = chunk

    def __iter__(self):
        for furl, stream in self.datapipe:
            while True:
                data = stream.read(self.chunk) if self.chunk else stream.read()
                if not data:
                    break
                yield furl, data
                if not self.chunk:
                    break
            if isinstance(stream, StreamWrapper):
                stream.autoclose()
            else:
                stream.close()


@functional_datapipe("save_to_disk")
class SaverIterDataPipe(IterDataPipe):
    """Write each ``(meta, data)`` to ``filepath_fn(meta)`` (default: meta is the path) and
    yield the path written."""

    def __init__(self, source_datapipe, mode: str = "w", filepath_fn=None) -> None:
        if mode not in ("w", "wb", "wt", "a", "ab", "at", "x", "xb", "xt"):
            raise ValueError(f"save_to_disk: invalid mode {mode!r}; expected a writing mode "
                             f"('w', 'wb', 'a', 'ab', 'x', 'xb')")
        if filepath_fn is not None:
            _check_unpickable_fn(filepath_fn)
        self.source_datapipe = source_datapipe
        self.mode = mode if "w" in mode or "a" in mode or "x" in mode else mode + "w"
        self.filepath_fn = filepath_fn

    def __iter__(self):
        for meta, data in self.source_datapipe:
            path = self.filepath_fn(meta) if self.filepath_fn else meta
            parent = os.path.dirname(path)
            if parent and not os.path.exists(parent):
                os.makedirs(parent)
            with open(path, self.mode) as f:
                f.write(data)
            yield path

    def __len__(self):
        return len(self.source_datapipe)


@functional_datapipe("check_hash")
class HashCheckerIterDataPipe(IterDataPipe):
    """Check each ``(path, stream or bytes)`` against ``hash_dict[path]``; yield it unchanged
    (streams rewound to the start when ``rewind``)."""

    def __init__(self, source_datapipe, hash_dict, hash_type: str = "sha256",
                 rewind: bool = True) -> None:
        if hash_type not in ("sha256", "md5"):
            raise ValueError(f"Invalid hash_type requested, should be one of ('sha256', 'md5'), "
                             f"got {hash_type!r}")
        self.source_datapipe = source_datapipe
        self.hash_dict = hash_dict
        self.hash_type = hash_type
        self.rewind = rewind

    def __iter__(self):
        for file_name, data in self.source_datapipe:
            if file_name not in self.hash_dict:
                raise RuntimeError(f"Unspecified hash for file {file_name}")
            hasher = hashlib.new(self.hash_type)
            if isinstance(data, (bytes, bytearray, str)):
                hasher.update(data.encode() if isinstance(data, str) else data)
            else:
                if self.rewind and not data.seekable():
                    raise RuntimeError(f"check_hash: the stream of {file_name} is not seekable; "
                                       f"pass rewind=False or read it into bytes first")
                while True:
                    block = data.read(1 << 20)
                    if not block:
                        break
                    hasher.update(block.encode() if isinstance(block, str) else block)
                if self.rewind:
                    data.seek(0)
            if hasher.hexdigest() != self.hash_dict[file_name]:
                raise RuntimeError(f"The hash {hasher.hexdigest()} of {file_name} does not match. "
                                   f"Delete the file manually and retry.")
            yield file_name, data

    def __len__(self):
        return len(self.source_datapipe)
