"""examples/vae.py: a few epochs improve the held-out ELBO, and the importance-sampled
log-likelihood is at least the ELBO (the IWAE bound is tighter)."""
import importlib.util
import math
import os

import pytest

pytest.importorskip("sklearn")

PATH = os.path.join(os.path.dirname(__file__), os.pardir, "examples", "vae.py")


def _load():
    spec = importlib.util.spec_from_file_location("ember_example_vae", PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_vae_trains_with_normal_and_kl_divergence():
    vae = _load()
    model, history, ll, images = vae.train(epochs=4, latent=2, log=lambda *a: None)
    first, last = history[0][1], history[-1][1]
    assert last > first + 1.0, history
    assert math.isfinite(ll) and ll > last - 1.0
    assert tuple(images.shape) == (256, 8, 8)
    assert float(images.min()) >= 0.0 and float(images.max()) <= 1.0
