"""The public functions torch binds as one object under two names (``torch.nn.functional.conv2d``
is ``torch.conv2d``): ``"<namespace>.<name>"`` -> the namespace whose object it is. ember's
binding layer (``binding.install``) gives them one wrapper, so they are one object in ember too.

Written by ``tools/torch_signatures.py`` from torch 2.13.0; do not edit.
"""
SHARED = {
    'autograd.handle_torch_function': 'nn.functional',
    'autograd.has_torch_function': 'nn.functional',
    'func.vmap': 'torch',
    'nn.functional.adaptive_avg_pool1d': 'torch',
    'nn.functional.avg_pool1d': 'torch',
    'nn.functional.bilinear': 'torch',
    'nn.functional.celu_': 'torch',
    'nn.functional.channel_shuffle': 'torch',
    'nn.functional.conv1d': 'torch',
    'nn.functional.conv2d': 'torch',
    'nn.functional.conv3d': 'torch',
    'nn.functional.conv_tbc': 'torch',
    'nn.functional.conv_transpose1d': 'torch',
    'nn.functional.conv_transpose2d': 'torch',
    'nn.functional.conv_transpose3d': 'torch',
    'nn.functional.cosine_similarity': 'torch',
    'nn.functional.hardshrink': 'torch',
    'nn.functional.native_channel_shuffle': 'torch',
    'nn.functional.pairwise_distance': 'torch',
    'nn.functional.pdist': 'torch',
    'nn.functional.pixel_shuffle': 'torch',
    'nn.functional.pixel_unshuffle': 'torch',
    'nn.functional.prelu': 'torch',
    'nn.functional.relu_': 'torch',
    'nn.functional.rrelu_': 'torch',
    'nn.functional.selu_': 'torch',
    'nn.functional.threshold_': 'torch',
}
