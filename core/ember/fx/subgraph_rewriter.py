"""``replace_pattern`` (torch.fx.subgraph_rewriter): find every occurrence of a pattern
function's graph in a ``GraphModule`` and swap in a replacement's.

``pattern`` and ``replacement`` are functions (or modules) traced symbolically. The pattern's
inputs are wildcards matching any value; its other nodes must match nodes of the module with
the same opcode and target, argument for argument (plain values equal), going upwards from the
node the pattern returns (the anchor). A match must be self-contained: a node inside it other
than the anchor may not be read from outside. Matches don't overlap. Each match is replaced by
a copy of the replacement graph wired to the matched inputs (by position), placed before the
first user of the match's result (as torch.fx places it), and the anchor's users read the
replacement's result; the module is recompiled. Returns the ``Match``es."""
from __future__ import annotations

from typing import NamedTuple

from .graph_module import GraphModule
from .node import Node
from .tracer import symbolic_trace

__all__ = ["Match", "replace_pattern"]


class Match(NamedTuple):
    anchor: Node
    nodes_map: dict


def _graph_of(fn):
    if isinstance(fn, GraphModule):
        return fn, fn.graph
    gm = symbolic_trace(fn)
    return gm, gm.graph


def _match(pn, gn, nodes_map, claimed):
    if pn in nodes_map:
        return nodes_map[pn] is gn
    if pn.op == "placeholder":
        nodes_map[pn] = gn
        return True
    if gn in claimed or gn in nodes_map.values():
        return False
    if pn.op != gn.op or pn.target != gn.target:
        return False
    if len(pn.args) != len(gn.args) or list(pn.kwargs) != list(gn.kwargs):
        return False
    saved = dict(nodes_map)
    nodes_map[pn] = gn
    ok = _match_args(list(pn.args) + list(pn.kwargs.values()),
                     list(gn.args) + list(gn.kwargs.values()), nodes_map, claimed)
    if not ok:
        nodes_map.clear()
        nodes_map.update(saved)
    return ok


def _match_args(pa, ga, nodes_map, claimed):
    if len(pa) != len(ga):
        return False
    for a, b in zip(pa, ga):
        if isinstance(a, Node):
            if not isinstance(b, Node) and a.op != "placeholder":
                return False
            if isinstance(b, Node):
                if not _match(a, b, nodes_map, claimed):
                    return False
            elif a in nodes_map:
                return False
            else:
                nodes_map[a] = b         # a wildcard input matched to a plain value
        elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            if not _match_args(list(a), list(b), nodes_map, claimed):
                return False
        elif type(a) is not type(b) or a != b:
            return False
    return True


def replace_pattern(gm, pattern, replacement):
    """Replaces every non-overlapping match of ``pattern`` in ``gm`` by ``replacement``;
    returns the list of ``Match(anchor, nodes_map)``."""
    _, p_graph = _graph_of(pattern)
    r_module, r_graph = _graph_of(replacement)
    p_inputs = [n for n in p_graph.nodes if n.op == "placeholder"]
    p_output = next(n for n in p_graph.nodes if n.op == "output")
    if not isinstance(p_output.args[0], Node):
        raise NotImplementedError("replace_pattern: the pattern must return one value")
    p_anchor = p_output.args[0]
    graph = gm.graph
    matches, claimed = [], set()
    for gn in reversed(list(graph.nodes)):
        nodes_map = {}
        if not _match(p_anchor, gn, nodes_map, claimed):
            continue
        inner = [g for p, g in nodes_map.items() if p.op != "placeholder" and p is not p_anchor]
        matched = set(g for p, g in nodes_map.items() if p.op != "placeholder")
        if any(u not in matched for g in inner for u in g.users):
            continue                       # an inner value is read outside the match
        claimed |= matched
        matches.append(Match(gn, nodes_map))
    order = {n: i for i, n in enumerate(graph.nodes)}
    matches.sort(key=lambda m: order[m.anchor])
    for m in matches:
        _replace(gm, graph, m, p_inputs, p_graph, r_module, r_graph, order)
    graph.lint()
    gm.recompile()
    return matches


def _replace(gm, graph, match, p_inputs, p_graph, r_module, r_graph, order):
    anchor = match.anchor
    # like torch.fx: the replacement goes right before the first user of the match's result
    users = sorted(anchor.users, key=lambda n: order.get(n, len(order)))
    where = users[0] if users else anchor
    r_inputs = [n for n in r_graph.nodes if n.op == "placeholder"]
    if len(r_inputs) != len(p_inputs):
        raise ValueError("replace_pattern: the pattern and the replacement must take the same "
                         "number of inputs")
    val_map = {r: match.nodes_map[p] for r, p in zip(r_inputs, p_inputs)}
    for node in r_graph.nodes:
        if node.op in ("get_attr", "call_module") and not _has(gm, node.target):
            gm.add_submodule(node.target, r_module.get_submodule(node.target)) \
                if node.op == "call_module" else setattr(gm, node.target,
                                                         getattr(r_module, node.target))
    with graph.inserting_before(where):
        result = graph.graph_copy(r_graph, val_map)
    if isinstance(result, Node):
        anchor.replace_all_uses_with(result)
    else:
        raise NotImplementedError("replace_pattern: the replacement must return one value")
    for p in reversed(list(p_graph.nodes)):
        g = match.nodes_map.get(p)
        if p.op in ("placeholder", "output") or g is None:
            continue
        if not g.users:
            graph.erase_node(g)


def _has(gm, target):
    obj = gm
    for atom in target.split("."):
        if not hasattr(obj, atom):
            return False
        obj = getattr(obj, atom)
    return True
