"""A variational autoencoder on scikit-learn's 8x8 digits, with ``ember.distributions``.

The encoder gives q(z | x) = Normal(mu(x), sigma(x)); a reparameterized sample z goes through
the decoder to Bernoulli pixel probabilities p(x | z); the loss is the negative ELBO,

    -E_q[log p(x | z)] + KL(q(z | x) || N(0, I)),

with the KL term from ``ember.distributions.kl_divergence`` (the closed form for two normals)
and the reconstruction term from ``Bernoulli.log_prob``. After training, the script reports
the held-out ELBO and an importance-weighted estimate of log p(x) (K samples of q), and checks
that sampling the prior and decoding gives digit-like images (ink in the middle, not noise).

Run:  python examples/vae.py [--epochs 30] [--latent 4] [--device cpu]
"""
from __future__ import annotations

import argparse
import math

import ember
import ember.nn as nn
from ember.distributions import Bernoulli, Independent, Normal, kl_divergence


def load_digits(seed=0):
    """Digits scaled to [0, 1] (the 0..16 gray levels), split 80/20."""
    try:
        from sklearn.datasets import load_digits as sk_load_digits
    except ImportError:
        raise SystemExit("examples/vae.py needs scikit-learn's bundled digits dataset: "
                         "pip install 'ember[demo]'") from None
    import numpy as np
    x = sk_load_digits().data.astype(np.float32) / 16.0
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = len(x) // 5
    return x[order[n_test:]], x[order[:n_test]]


class VAE(nn.Module):
    def __init__(self, pixels=64, hidden=128, latent=4):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(pixels, hidden), nn.ReLU(),
                                     nn.Linear(hidden, 2 * latent))
        self.decoder = nn.Sequential(nn.Linear(latent, hidden), nn.ReLU(),
                                     nn.Linear(hidden, pixels))
        self.latent = latent

    def posterior(self, x):
        mu, log_sigma = self.encoder(x).chunk(2, dim=-1)
        return Independent(Normal(mu, log_sigma.exp()), 1)

    def prior(self, like):
        zeros = ember.zeros(like.shape[:-1] + (self.latent,), device=like.device)
        return Independent(Normal(zeros, ember.ones_like(zeros)), 1)

    def likelihood(self, z):
        return Independent(Bernoulli(logits=self.decoder(z), validate_args=False), 1)

    def negative_elbo(self, x):
        q = self.posterior(x)
        z = q.rsample()
        reconstruction = self.likelihood(z).log_prob(x)
        return (kl_divergence(q, self.prior(x)) - reconstruction).mean()

    def log_likelihood(self, x, k=64):
        """log p(x) by importance sampling with q as the proposal (IWAE bound, K samples)."""
        q = self.posterior(x)
        z = q.sample((k,))
        log_w = self.likelihood(z).log_prob(x) + self.prior(x).log_prob(z) - q.log_prob(z)
        return (log_w.logsumexp(0) - math.log(k)).mean()


def _log(line):
    print(line, flush=True)   # a line per epoch, also when the output is piped


def train(epochs=30, latent=4, device="cpu", batch=64, lr=2e-3, seed=0, log=_log):
    ember.manual_seed(seed)
    train_x, test_x = load_digits(seed)
    xtr = ember.tensor(train_x, device=device)
    xte = ember.tensor(test_x, device=device)
    model = VAE(latent=latent).to(device)
    opt = ember.optim.Adam(model.parameters(), lr=lr)
    n = xtr.shape[0]
    history = []
    for epoch in range(epochs):
        perm = ember.randperm(n, device=device)
        total = 0.0
        for i in range(0, n, batch):
            x = xtr[perm[i:i + batch]]
            loss = model.negative_elbo(x)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss) * x.shape[0]
        with ember.no_grad():
            test_elbo = -float(model.negative_elbo(xte))
        history.append((total / n, test_elbo))
        log(f"epoch {epoch + 1:3d}  train -ELBO {total / n:8.3f}  test ELBO {test_elbo:8.3f}")
    with ember.no_grad():
        ll = float(model.log_likelihood(xte))
        z = model.prior(xte[:1]).sample((256,)).squeeze(1)
        images = model.likelihood(z).base_dist.probs.reshape(256, 8, 8)
    return model, history, ll, images


def main(argv=None):
    p = argparse.ArgumentParser(description="A VAE on the 8x8 digits with ember.distributions",
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--epochs", type=int, default=30, help="passes over the training images")
    p.add_argument("--latent", type=int, default=4, help="size of the latent code z")
    p.add_argument("--device", default="cpu", help="device of the model and data")
    args = p.parse_args(argv)
    model, history, ll, images = train(args.epochs, args.latent, args.device)
    first, last = history[0][1], history[-1][1]
    print(f"test ELBO: {first:.2f} after the first epoch, {last:.2f} after {len(history)}")
    print(f"test log p(x) (importance sampling, K=64): {ll:.2f} nats per image")
    centre = float(images[:, 2:6, 2:6].mean())
    border = float(images[:, :, 0].mean())
    print(f"decoded prior samples: mean ink {centre:.2f} in the centre, {border:.2f} on the "
          f"left border")
    return history, ll, centre, border


if __name__ == "__main__":
    main()
