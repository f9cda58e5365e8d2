"""``ember.nn``: modules, parameters, functional forms, initializers and utilities, with the
names of ``torch.nn``."""
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import Module  # noqa: F401
from . import functional  # noqa: F401
from . import init  # noqa: F401
from . import grad  # noqa: F401
from . import utils  # noqa: F401
from . import parallel  # noqa: F401
from . import attention  # noqa: F401
from .parallel import DataParallel  # noqa: F401
