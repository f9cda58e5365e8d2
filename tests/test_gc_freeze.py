"""``import ember`` moves the objects alive then to the cycle collector's permanent generation
(core/ember/__init__.py): a full collection walks only what came after, while cyclic garbage
made later is still collected. ``EMBER_GC_FREEZE=0`` leaves the collector as it is. Object
counts are checked (deterministic), not times."""
import json
import os
import subprocess
import sys

PROBE = """
import gc, json, weakref
import ember
frozen, walked = gc.get_freeze_count(), len(gc.get_objects())
class Node: pass
a, b = Node(), Node()
a.other, b.other = b, a           # a cycle made after the import
gone = weakref.ref(a)
del a, b
gc.collect()
print(json.dumps({"frozen": frozen, "walked": walked, "cycle_collected": gone() is None}))
"""


def _probe(**env):
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         check=True, env={**os.environ, **env})
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_freezes_its_objects_and_later_cycles_are_still_collected():
    r = _probe()
    assert r["frozen"] > 50_000 and r["walked"] < r["frozen"] // 10, r
    assert r["cycle_collected"]


def test_the_freeze_can_be_turned_off():
    r = _probe(EMBER_GC_FREEZE="0")
    assert r["frozen"] == 0 and r["walked"] > 50_000 and r["cycle_collected"], r
