"""``ember.data.datapipes.utils``: helpers for writing DataPipes."""
from ember.utils.data.datapipes.utils.common import StreamWrapper  # noqa: F401
from ember.utils.data.datapipes.utils.common import (  # noqa: F401
    get_file_binaries_from_pathnames, get_file_pathnames_from_root, match_masks,
    validate_input_col)

__all__ = ["StreamWrapper", "get_file_binaries_from_pathnames", "get_file_pathnames_from_root",
           "match_masks", "validate_input_col"]
