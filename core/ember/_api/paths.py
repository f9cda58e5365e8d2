"""torch's import paths where ember's own modules are laid out differently (issue #30).

Real code imports from where torch defines a name — ``from torch.nn.modules.batchnorm import
BatchNorm2d``, ``torch.nn.modules.activation.MultiheadAttention``, ``from torch.functional import
einsum`` — while ember keeps the same object elsewhere (``nn/modules/normalization.py``,
``nn/modules/multihead.py``). ``install()`` (run by ``import ember``) makes each path below name
the same object as its public name: an existing module gains the attribute, a missing one is
made (and registered in ``sys.modules``, so ``import ember.nn.modules.batchnorm`` works).
``tests/test_paths.py`` checks every torch path of ``tests/data/torch_paths.json``.
"""
from __future__ import annotations

import importlib
import sys
import types

_FUNCTIONAL = ("atleast_1d atleast_2d atleast_3d block_diag broadcast_shapes broadcast_tensors "
               "cartesian_prod cdist chain_matmul einsum istft lu meshgrid norm pca_lowrank "
               "split stft svd_lowrank tensordot unique unique_consecutive unravel_index")
_WINDOWS = ("bartlett blackman cosine exponential gaussian general_cosine general_hamming "
            "hamming hann kaiser nuttall")


def _same(source, names):
    return {name: f"{source}.{name}" for name in names.split()}


# ember module path -> {attribute: the ember path of the object it names}
ALIASES = {
    "ember.functional": _same("ember", _FUNCTIONAL),
    "ember.signal.windows.windows": _same("ember.signal.windows", _WINDOWS),
    "ember.nn.modules.batchnorm": _same("ember.nn", "BatchNorm1d BatchNorm2d BatchNorm3d "
                                        "LazyBatchNorm1d LazyBatchNorm2d LazyBatchNorm3d"),
    "ember.nn.modules.channelshuffle": _same("ember.nn", "ChannelShuffle"),
    "ember.nn.modules.activation": _same("ember.nn", "MultiheadAttention"),
    "ember.nn.modules.conv": _same("ember.nn", "LazyConv1d LazyConv2d LazyConv3d "
                                   "LazyConvTranspose1d LazyConvTranspose2d "
                                   "LazyConvTranspose3d"),
    "ember.nn.modules.instancenorm": _same("ember.nn", "LazyInstanceNorm1d LazyInstanceNorm2d "
                                           "LazyInstanceNorm3d"),
    "ember.nn.modules.linear": _same("ember.nn", "LazyLinear"),
    "ember.nn.modules.normalization": _same("ember.nn", "LocalResponseNorm CrossMapLRN2d"),
    "ember.nn.modules.sparse": _same("ember.nn", "EmbeddingBag"),
    "ember.nn.utils.stateless": _same("ember.func", "functional_call"),
    "ember.optim.adamw": {"AdamW": "ember.optim.AdamW", "adamw": "ember.optim.adam.adamw"},
    "ember.autograd.anomaly_mode": _same("ember.autograd", "detect_anomaly set_detect_anomaly"),
    "ember.utils.dlpack": _same("ember", "from_dlpack"),
    # torch's datapipe modules and class names (ember's classes carry torchdata's short names)
    "ember.utils.data.datapipes.iter.filelister": {
        "FileListerIterDataPipe": "ember.utils.data.datapipes.iter.FileLister"},
    "ember.utils.data.datapipes.iter.fileopener": {
        "FileOpenerIterDataPipe": "ember.utils.data.datapipes.iter.FileOpener"},
    "ember.utils.data.datapipes.iter.selecting": {
        "FilterIterDataPipe": "ember.utils.data.datapipes.iter.Filter"},
    "ember.utils.data.datapipes.iter.sharding": {
        "ShardingFilterIterDataPipe": "ember.utils.data.datapipes.iter.ShardingFilter",
        "SHARDING_PRIORITIES": "ember.utils.data.datapipes.iter.SHARDING_PRIORITIES"},
    "ember.utils.data.datapipes.iter.streamreader": {
        "StreamReaderIterDataPipe": "ember.utils.data.datapipes.iter.StreamReader"},
    "ember.utils.data.datapipes.iter.utils": {
        "IterableWrapperIterDataPipe": "ember.utils.data.datapipes.iter.IterableWrapper"},
    "ember.utils.data.datapipes.map.callable": {
        "MapperMapDataPipe": "ember.utils.data.datapipes.map.MapperMapDataPipe"},
    "ember.utils.data.datapipes.map.combinatorics": {
        "ShufflerIterDataPipe": "ember.utils.data.datapipes.map.ShufflerIterDataPipe"},
    "ember.utils.data.datapipes.map.combining": _same(
        "ember.utils.data.datapipes.map", "ConcaterMapDataPipe ZipperMapDataPipe"),
    "ember.utils.data.datapipes.map.grouping": _same("ember.utils.data.datapipes.map",
                                                     "BatcherMapDataPipe"),
    "ember.utils.data.datapipes.map.utils": _same("ember.utils.data.datapipes.map",
                                                  "SequenceWrapperMapDataPipe"),
}


def resolve(path: str):
    """The object at a dotted ember path, importing modules as ``import`` would."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        name = ".".join(parts[:i])
        try:
            obj = sys.modules.get(name) or importlib.import_module(name)
        except ImportError:
            continue
        for part in parts[i:]:
            obj = getattr(obj, part)
        return obj
    raise ImportError(path)


def _module(path: str):
    existing = sys.modules.get(path)
    if existing is not None:
        return existing
    try:
        return importlib.import_module(path)
    except ImportError:
        pass
    parent_name, _, leaf = path.rpartition(".")
    parent = _module(parent_name)
    mod = types.ModuleType(path, f"torch's {path.replace('ember', 'torch', 1)}: names ember "
                                 f"keeps elsewhere, at torch's path.")
    sys.modules[path] = mod
    if not isinstance(getattr(parent, leaf, None), types.ModuleType):
        setattr(parent, leaf, mod)
    return mod


def install() -> None:
    for path, names in ALIASES.items():
        mod = _module(path)
        for name, source in names.items():
            if not hasattr(mod, name):
                setattr(mod, name, resolve(source))
