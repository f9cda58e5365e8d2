"""Archives and compressed streams: load_from_tar, load_from_zip, load_from_xz,
load_from_bz2, decompress (all standard library)."""
from __future__ import annotations

import bz2
import gzip
import lzma
import os
import pathlib
import tarfile
import zipfile
from enum import Enum

from .._decorator import functional_datapipe
from ..datapipe import IterDataPipe
from ..utils.common import StreamWrapper, declared_length, validate_pathname_binary_tuple

__all__ = ["Bz2FileLoaderIterDataPipe", "CompressionType", "DecompressorIterDataPipe",
           "TarArchiveLoaderIterDataPipe", "XzFileLoaderIterDataPipe",
           "ZipArchiveLoaderIterDataPipe"]


def _finish(stream):
    if isinstance(stream, StreamWrapper):
        stream.autoclose()


class _ArchiveLoader(IterDataPipe):
    def __init__(self, datapipe, length: int = -1) -> None:
        self.datapipe = datapipe
        self.length = length

    def __len__(self):
        return declared_length(self)


@functional_datapipe("load_from_tar")
class TarArchiveLoaderIterDataPipe(_ArchiveLoader):
    """``(path/member, stream)`` for every file member of each tar ``(path, stream)``;
    ``mode`` as in ``tarfile.open`` ("r:*" detects compression)."""

    def __init__(self, datapipe, mode: str = "r:*", length: int = -1) -> None:
        super().__init__(datapipe, length)
        self.mode = mode

    def __iter__(self):
        for data in self.datapipe:
            validate_pathname_binary_tuple(data)
            pathname, stream = data
            try:
                if isinstance(stream, StreamWrapper) and isinstance(stream.file_obj, tarfile.TarFile):
                    tar = stream.file_obj
                else:
                    reading = stream.file_obj if isinstance(stream, StreamWrapper) else stream
                    tar = tarfile.open(fileobj=reading, mode=self.mode)
                for member in tar:
                    if not member.isfile():
                        continue
                    extracted = tar.extractfile(member)
                    if extracted is None:
                        continue
                    inner = os.path.normpath(os.path.join(pathname, member.name))
                    yield inner, StreamWrapper(extracted, stream if isinstance(stream, StreamWrapper)
                                               else None, name=inner)
            except tarfile.TarError as e:
                raise tarfile.TarError(f"Unable to extract files from corrupted tarfile stream "
                                       f"{pathname} due to: {e}, abort!") from e
            finally:
                _finish(stream)


@functional_datapipe("load_from_zip")
class ZipArchiveLoaderIterDataPipe(_ArchiveLoader):
    """``(path/member, stream)`` for every file of each zip ``(path, stream)`` (the stream
    must be seekable, as ``zipfile`` needs)."""

    def __iter__(self):
        for data in self.datapipe:
            validate_pathname_binary_tuple(data)
            pathname, stream = data
            try:
                reading = stream.file_obj if isinstance(stream, StreamWrapper) else stream
                archive = zipfile.ZipFile(reading)
                for info in archive.infolist():
                    if info.is_dir():
                        continue
                    inner = os.path.normpath(os.path.join(pathname, info.filename))
                    yield inner, StreamWrapper(archive.open(info), stream if isinstance(
                        stream, StreamWrapper) else None, name=inner)
            except zipfile.BadZipFile as e:
                raise zipfile.BadZipFile(f"Unable to extract files from corrupted zipfile stream "
                                         f"{pathname} due to: {e}, abort!") from e
            finally:
                _finish(stream)


class _SingleStreamLoader(_ArchiveLoader):
    suffix = ""

    def _open(self, stream):
        raise NotImplementedError

    def __iter__(self):
        for data in self.datapipe:
            validate_pathname_binary_tuple(data)
            pathname, stream = data
            new_path = pathname[:-len(self.suffix)] if pathname.endswith(self.suffix) else pathname
            reading = stream.file_obj if isinstance(stream, StreamWrapper) else stream
            yield new_path, StreamWrapper(self._open(reading), stream if isinstance(
                stream, StreamWrapper) else None, name=new_path)
            _finish(stream)


@functional_datapipe("load_from_xz")
class XzFileLoaderIterDataPipe(_SingleStreamLoader):
    """``(path without .xz, decompressed stream)`` for each ``(path, stream)``."""

    suffix = ".xz"

    def _open(self, stream):
        return lzma.open(stream)


@functional_datapipe("load_from_bz2")
class Bz2FileLoaderIterDataPipe(_SingleStreamLoader):
    """``(path without .bz2, decompressed stream)`` for each ``(path, stream)``."""

    suffix = ".bz2"

    def _open(self, stream):
        return bz2.open(stream)


class CompressionType(Enum):
    GZIP = "gzip"
    LZMA = "lzma"
    TAR = "tar"
    ZIP = "zip"
    BZIP2 = "bz2"


def _open_gzip(f):
    return gzip.GzipFile(fileobj=f)


def _open_lzma(f):
    return lzma.LZMAFile(f)


def _open_tar(f):
    return tarfile.open(fileobj=f, mode="r:*")


def _open_zip(f):
    return zipfile.ZipFile(f)


def _open_bz2(f):
    return bz2.BZ2File(f)


@functional_datapipe("decompress")
class DecompressorIterDataPipe(IterDataPipe):
    """``(path, opened)`` for each compressed ``(path, stream)``: the type comes from
    ``file_type`` or the extension (.gz .xz .bz2 give a decompressed stream; .tar/.tar.gz/.zip
    give the opened archive, which ``load_from_tar`` also accepts)."""

    types = CompressionType
    _OPENERS = {CompressionType.GZIP: _open_gzip, CompressionType.LZMA: _open_lzma,
                CompressionType.TAR: _open_tar, CompressionType.ZIP: _open_zip,
                CompressionType.BZIP2: _open_bz2}

    def __init__(self, source_datapipe, file_type=None) -> None:
        self.source_datapipe = source_datapipe
        if isinstance(file_type, str):
            try:
                file_type = CompressionType(file_type.lower())
            except ValueError:
                raise ValueError(f"decompress: unknown file_type {file_type!r}; expected one of "
                                 f"{[t.value for t in CompressionType]}") from None
        self.file_type = file_type

    def _detect(self, path):
        if self.file_type:
            return self.file_type
        if "".join(pathlib.Path(path).suffixes[-2:]) in {".tar.gz", ".tar.xz", ".tar.bz2"}:
            return CompressionType.TAR
        ext = os.path.splitext(path)[1]
        found = {".tar": CompressionType.TAR, ".xz": CompressionType.LZMA,
                 ".gz": CompressionType.GZIP, ".zip": CompressionType.ZIP,
                 ".bz2": CompressionType.BZIP2}.get(ext)
        if found is None:
            raise RuntimeError(f"File at {path} has file extension {ext}, which does not match "
                               f"what are supported by ExtractorIterDataPipe.")
        return found

    def __iter__(self):
        for path, file in self.source_datapipe:
            try:
                reading = file.file_obj if isinstance(file, StreamWrapper) else file
                opened = self._OPENERS[self._detect(path)](reading)
                yield path, StreamWrapper(opened, file if isinstance(file, StreamWrapper)
                                          else None, name=path)
            finally:
                _finish(file)
