"""``python -m ember.run [--device SOURCE=TARGET] script.py [args]``: see ``ember.run``."""
import sys

from . import main

sys.exit(main(prog="python -m ember.run"))
