"""Does ember save what torch's derivatives save? (issue #30, item 4)

    python bench/saved_tensors.py [--ops PATTERN] [--samples N] [--list]

For every OpInfo of torch's test database (``common_methods_invocations.op_db``) that supports
autograd and that ember names, each of its first ``N`` float64 samples is run under torch and
under ember with every argument the OpInfo differentiates a non-leaf that requires grad (a
clone of a leaf); then one of them
— an input, or an output — is modified in place (``add_(0)``: same values, a new version) and
the outputs' sum is backpropagated. torch raises "modified by an inplace operation" exactly
when its derivative saved that tensor (``derivatives.yaml``); ember must raise in the same
cases. The report counts the cases and lists each disagreement:

* ``ember raises, torch does not``: ember saves more than torch — a program torch runs
  (``ReLU(inplace=True)`` after a layer) fails in ember;
* ``torch raises, ember does not``: ember saves less (its formula does not need the value; it
  never reads an unsaved tensor, which reaches the formula as None).

``tests/test_saved_tensors.py`` runs the same comparison.
"""
from __future__ import annotations

import argparse
import fnmatch
import sys
import warnings

_INPLACE = ("modified by an inplace operation", "modified by an in-place operation")


def _is_version_error(e) -> bool:
    return isinstance(e, RuntimeError) and any(s in str(e) for s in _INPLACE)


def ember_callable(info):
    """ember's function for an OpInfo (None when ember does not name it)."""
    import ember
    name = info.name
    if name.startswith("_"):
        return None
    obj = ember
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj if callable(obj) else None


def _convert(x, lib, to_lib):
    import torch
    if isinstance(x, torch.Tensor):
        return to_lib(x)
    if isinstance(x, torch.dtype):
        return getattr(lib, str(x).split(".")[1]) if lib.__name__ == "ember" else x
    if isinstance(x, (list, tuple)):
        return type(x)(_convert(v, lib, to_lib) for v in x)
    if isinstance(x, dict):
        return {k: _convert(v, lib, to_lib) for k, v in x.items()}
    return x


def _outputs(out):
    if isinstance(out, (list, tuple)):
        return [o for x in out for o in _outputs(x)]
    return [out] if hasattr(out, "requires_grad") else []


def run_case(lib, fn, sample, where):
    """Run ``fn`` on ``sample`` under ``lib`` (torch or ember), modify ``where`` ("input i" or
    "output i") in place, backpropagate: "raises", "runs", or why the case does not apply."""
    import torch
    inputs = []

    def to_lib(t):
        if lib is torch:
            base = t.detach().clone()
        else:
            import ember
            base = ember.tensor(t.detach().cpu().numpy().copy())
        if t.requires_grad:  # an argument the OpInfo differentiates (not running stats)
            leaf = base.requires_grad_(True)
            node = leaf.clone()
            inputs.append(node)
            return node
        return base

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            x = _convert(sample.input, lib, to_lib)
            args = _convert(sample.args, lib, to_lib)
            kwargs = _convert(sample.kwargs, lib, to_lib)
            out = fn(x, *args, **kwargs)
        except Exception as e:  # noqa: BLE001 - the op refuses the sample: not comparable
            return f"forward fails: {type(e).__name__}"
        outs = [o for o in _outputs(out) if o.requires_grad]
        if not outs:
            return "no differentiable output"
        kind, _, index = where.partition(" ")
        pool = inputs if kind == "input" else outs
        i = int(index)
        if i >= len(pool):
            return "no such tensor"
        try:
            pool[i].add_(0)
        except Exception as e:  # noqa: BLE001 - e.g. an output that may not be modified
            return f"in-place refused: {type(e).__name__}"
        try:
            loss = sum(o.real.sum() if o.dtype.is_complex else o.sum() for o in outs)
            loss.backward()
        except Exception as e:  # noqa: BLE001
            return "raises" if _is_version_error(e) else f"backward fails: {type(e).__name__}"
    return "runs"


def compare(patterns=("*",), n_samples=2):
    """[(op, sample index, where, torch outcome, ember outcome)] over op_db."""
    import torch
    from torch.testing._internal.common_methods_invocations import op_db
    rows = []
    for info in op_db:
        if not info.supports_autograd or torch.float64 not in info.dtypes:
            continue
        if not any(fnmatch.fnmatch(info.name, p) for p in patterns):
            continue
        fn = ember_callable(info)
        if fn is None:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                samples = list(info.sample_inputs("cpu", torch.float64, requires_grad=True))
            except Exception:  # noqa: BLE001
                continue
        for k, sample in enumerate(samples[:n_samples]):
            for where in ("input 0", "input 1", "input 2", "output 0", "output 1"):
                t = run_case(torch, info.op, sample, where)
                if t not in ("raises", "runs"):
                    continue
                e = run_case(__import__("ember"), fn, sample, where)
                rows.append((info.name + (f".{info.variant_test_name}"
                                          if info.variant_test_name else ""), k, where, t, e))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", default="*", help="comma-separated fnmatch patterns of OpInfo names")
    ap.add_argument("--samples", type=int, default=2)
    ap.add_argument("--list", action="store_true", help="list every disagreement")
    args = ap.parse_args(argv)
    rows = compare(args.ops.split(","), args.samples)
    same = [r for r in rows if r[3] == r[4]]
    more = [r for r in rows if r[3] == "runs" and r[4] == "raises"]
    less = [r for r in rows if r[3] == "raises" and r[4] == "runs"]
    other = [r for r in rows if r not in same and r not in more and r not in less]
    ops = {r[0] for r in rows}
    print(f"{len(rows)} cases over {len(ops)} ops: {len(same)} agree, "
          f"{len(more)} ember raises where torch does not, {len(less)} torch raises where ember "
          f"does not, {len(other)} ember fails otherwise")
    if args.list:
        for title, group in (("ember raises, torch does not", more),
                             ("torch raises, ember does not", less), ("ember fails", other)):
            if group:
                print(f"\n{title}:")
                for r in group:
                    print(f"  {r[0]} sample {r[1]} {r[2]}: torch {r[3]}, ember {r[4]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
