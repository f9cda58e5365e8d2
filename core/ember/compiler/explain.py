"""``ember.compiler.explain``: torch._dynamo.explain's summary of a compiled function — its
graphs, graph breaks with their reasons and lines, the ops of each graph, and the pieces a
function with breaks runs as."""
from __future__ import annotations


class _Explanation:
    def __init__(self, graphs, breaks, pieces=()):
        self.graphs = graphs
        self.graph_count = len(graphs)
        self.break_reasons = breaks
        self.graph_break_count = len(breaks)
        self.ops_per_graph = [g.op_names() for g in graphs]
        self.op_count = sum(len(g.nodes) for g in graphs)
        #: how a function with breaks runs: its pieces in order ("graph lines 3-5", ...)
        self.pieces = list(pieces)

    def __str__(self):
        lines = [f"Graph Count: {self.graph_count}",
                 f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}", "Break Reasons:"]
        lines += [f"  {i + 1}. {reason}\n     at {where}"
                  for i, (reason, where) in enumerate(self.break_reasons)]
        if self.pieces:
            lines.append("Pieces (resumed around the breaks):")
            lines += [f"  {p}" for p in self.pieces]
        lines.append("Ops per Graph:")
        for i, ops in enumerate(self.ops_per_graph):
            lines.append(f"  graph {i}: {', '.join(ops)}")
        return "\n".join(lines)


def explain(fn):
    """``explain(fn)(*args)``: capture ``fn`` on these arguments and report its graphs, graph
    breaks with their reasons, and the ops of each graph (torch._dynamo.explain's summary).
    A function whose breaks it can resume around is called a second time, through its pieces,
    so that each piece's graph is captured and shown."""
    def run(*args, **kwargs):
        from . import CompiledFunction, _CompiledModule  # cycle: ember.compiler (its __init__)
        compiled = fn._compiled if isinstance(fn, _CompiledModule) else \
            fn if isinstance(fn, CompiledFunction) else CompiledFunction(fn)
        compiled.cache.clear()
        compiled.dynamic_entries.clear()
        compiled(*args, **kwargs)
        resumed = [e.resumed for e in compiled.entries() if e.resumed is not None]
        if resumed:
            compiled(*args, **kwargs)
        graphs, breaks, pieces = [], [], []
        _gather(compiled, graphs, breaks, pieces)
        return _Explanation(graphs, breaks, pieces)
    return run


def _gather(compiled, graphs, breaks, pieces):
    for entry in compiled.entries():
        if entry.graph is not None:
            graphs.append(entry.graph)
        breaks.extend(entry.breaks)
        if entry.resumed is not None:
            pieces.extend(entry.resumed.pieces())
            for piece in entry.resumed.compiled_pieces():
                _gather(piece, graphs, breaks, [])
