"""Parsing file streams: readlines, parse_csv, parse_csv_as_dict, parse_json_files,
lines_to_paragraphs, rows2columnar."""
from __future__ import annotations

import contextlib
import csv
import json
from collections import defaultdict

from .._decorator import functional_datapipe
from ..datapipe import IterDataPipe
from ..utils.common import StreamWrapper, _check_unpickable_fn

__all__ = ["CSVDictParserIterDataPipe", "CSVParserIterDataPipe", "JsonParserIterDataPipe",
           "LineReaderIterDataPipe", "ParagraphAggregatorIterDataPipe",
           "Rows2ColumnarIterDataPipe"]


def _skip_lines(stream, count):
    """The stream's lines after the first ``count``; closes the stream when done."""
    try:
        with contextlib.suppress(StopIteration):
            for _ in range(count):
                next(stream)
        yield from stream
    finally:
        stream.close()


def _decoded(lines, encoding, errors):
    for line in lines:
        yield line.decode(encoding, errors) if isinstance(line, bytes) else line


class _StreamParser(IterDataPipe):
    def __init__(self, source_datapipe, skip_lines, decode, encoding, errors, return_path):
        self.source_datapipe = source_datapipe
        self.skip_lines = skip_lines
        self.decode = decode
        self.encoding = encoding
        self.errors = errors
        self.return_path = return_path

    def _lines(self, stream):
        lines = _skip_lines(stream, self.skip_lines)
        return _decoded(lines, self.encoding, self.errors) if self.decode else lines

    def _emit(self, path, rows):
        if self.return_path:
            for row in rows:
                yield path, row
        else:
            yield from rows


@functional_datapipe("readlines")
class LineReaderIterDataPipe(_StreamParser):
    """The lines of each ``(path, stream)``: ``(path, line)`` pairs, or lines alone with
    ``return_path=False`` (functional name: ``readlines``)."""

    def __init__(self, source_datapipe, *, skip_lines: int = 0, strip_newline: bool = True,
                 decode: bool = False, encoding="utf-8", errors: str = "ignore",
                 return_path: bool = True) -> None:
        super().__init__(source_datapipe, skip_lines, decode, encoding, errors, return_path)
        self.strip_newline = strip_newline

    def __iter__(self):
        strip, decode, with_path = self.strip_newline, self.decode, self.return_path
        encoding, errors = self.encoding, self.errors
        for path, stream in self.source_datapipe:
            raw = stream.file_obj if isinstance(stream, StreamWrapper) else stream
            try:
                for _ in range(self.skip_lines):
                    if next(raw, None) is None:
                        break
                for line in raw:  # one loop for every option: this is the per-line hot path
                    if strip:
                        line = line.strip("\r\n") if type(line) is str else line.strip(b"\r\n")
                    if decode and type(line) is bytes:
                        line = line.decode(encoding, errors)
                    yield (path, line) if with_path else line
            finally:
                stream.close()


@functional_datapipe("parse_csv")
class CSVParserIterDataPipe(_StreamParser):
    """The rows (lists, or tuples with ``as_tuple``) of each ``(path, stream)``; extra keyword
    arguments go to ``csv.reader`` (``delimiter=``, ``quotechar=``...)."""

    def __init__(self, source_datapipe, *, skip_lines: int = 0, decode: bool = True,
                 encoding: str = "utf-8", errors: str = "ignore", return_path: bool = False,
                 as_tuple: bool = False, **fmtparams) -> None:
        super().__init__(source_datapipe, skip_lines, decode, encoding, errors, return_path)
        self.as_tuple = as_tuple
        self.fmtparams = fmtparams

    def __iter__(self):
        for path, stream in self.source_datapipe:
            rows = csv.reader(self._lines(stream), **self.fmtparams)
            if self.as_tuple:
                rows = map(tuple, rows)
            yield from self._emit(path, rows)


@functional_datapipe("parse_csv_as_dict")
class CSVDictParserIterDataPipe(_StreamParser):
    """The rows of each ``(path, stream)`` as dicts keyed by the header line."""

    def __init__(self, source_datapipe, *, skip_lines: int = 0, decode: bool = True,
                 encoding: str = "utf-8", errors: str = "ignore", return_path: bool = False,
                 **fmtparams) -> None:
        super().__init__(source_datapipe, skip_lines, decode, encoding, errors, return_path)
        self.fmtparams = fmtparams

    def __iter__(self):
        for path, stream in self.source_datapipe:
            yield from self._emit(path, csv.DictReader(self._lines(stream), **self.fmtparams))


@functional_datapipe("parse_json_files")
class JsonParserIterDataPipe(IterDataPipe):
    """``(path, json.loads(content))`` for each ``(path, stream)``."""

    def __init__(self, source_datapipe, **kwargs) -> None:
        self.source_datapipe = source_datapipe
        self.kwargs = kwargs

    def __iter__(self):
        for file_name, stream in self.source_datapipe:
            try:
                data = stream.read()
            finally:
                stream.close()
            try:
                yield file_name, json.loads(data, **self.kwargs)
            except json.JSONDecodeError as e:
                raise ValueError(f"parse_json_files: {file_name} is not valid JSON: {e}") from e

    def __len__(self):
        return len(self.source_datapipe)


def _default_line_join(lines):
    return "\n".join(lines)


@functional_datapipe("lines_to_paragraphs")
class ParagraphAggregatorIterDataPipe(IterDataPipe):
    """Join runs of non-empty ``(path, line)`` lines into ``(path, paragraph)``."""

    def __init__(self, source_datapipe, joiner=_default_line_join) -> None:
        _check_unpickable_fn(joiner)
        self.source_datapipe = source_datapipe
        self.joiner = joiner

    def __iter__(self):
        buffer, prev = [], None
        for filename, line in self.source_datapipe:
            if prev is None:
                prev = filename
            if line and prev == filename:
                buffer.append(line)
            else:
                if buffer:
                    yield prev, self.joiner(buffer)
                buffer = [line] if line else []
                prev = filename
        if buffer:
            yield prev, self.joiner(buffer)


@functional_datapipe("rows2columnar")
class Rows2ColumnarIterDataPipe(IterDataPipe):
    """Turn each batch of rows (dicts, or lists named by ``column_names``) into a dict of
    columns."""

    def __init__(self, source_datapipe, column_names=None) -> None:
        self.source_datapipe = source_datapipe
        self.column_names = list(column_names) if column_names else []

    def __iter__(self):
        names = self.column_names
        for batch in self.source_datapipe:
            columnar = defaultdict(list)
            for row in batch:
                if isinstance(row, dict):
                    for key in (names or row):
                        columnar[key].append(row[key])
                else:
                    if len(row) > len(names):
                        raise ValueError(f"rows2columnar: a list row of length {len(row)} needs "
                                         f"column_names for every position, got {names}")
                    for name, value in zip(names, row):
                        columnar[name].append(value)
            yield columnar

    def __len__(self):
        return len(self.source_datapipe)
