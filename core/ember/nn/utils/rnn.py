"""``ember.nn.utils.rnn`` (PyTorch's path): packed sequences and their padding helpers. They
are defined in ``ember.nn._packed_sequence``, below the recurrent layers that step through
them."""
from .._packed_sequence import (PackedSequence, invert_permutation,  # noqa: F401
                                pack_padded_sequence, pack_sequence, pad_packed_sequence,
                                pad_sequence, unpack_sequence, unpad_sequence)

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence",
           "pad_sequence", "unpad_sequence", "pack_sequence", "unpack_sequence"]
