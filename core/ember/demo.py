"""``ember demo``: train one small classifier on every available backend and compare them.

The data is scikit-learn's bundled handwritten digits (1797 8×8 images, no download), or
synthetic 8×8 digits where scikit-learn is not installed. Every
device starts from the same weights (initialised on the CPU under one seed, then moved) and sees
the same batches in the same order, so the loss curves of a correct backend follow the CPU's to
float32 rounding; the table says whether they do.
"""
from __future__ import annotations

import importlib.util
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

import ember
from ember import nn

from .runtime.registry import registry
from .utils.progress import Progress

# loss curves of two backends agree when every step's losses are this close (float32 kernels that
# sum in different orders drift slowly over a few hundred steps; a wrong kernel is off at once)
AGREE_RTOL = 2e-2
AGREE_ATOL = 2e-3


@dataclass
class RunResult:
    device: str
    losses: list = field(default_factory=list)
    test_accuracy: float = float("nan")
    ms_per_step: float = float("nan")
    predictions: np.ndarray | None = None
    error: str | None = None


def synthetic_digits(n: int = 1797, seed: int = 0):
    """(images, labels) like scikit-learn's digits without it (a machine with no network and
    no ``ember[demo]``): ten fixed 8x8 stroke templates, each sample shifted by up to a pixel
    and noised, intensities in 0..16 as the real set's."""
    rng = np.random.default_rng(1234)
    templates = np.zeros((10, 10, 10))
    for k in range(10):
        for _ in range(4):   # four strokes per class
            r0, c0 = rng.integers(1, 9, 2)
            dr, dc = rng.choice([-1, 0, 1], 2)
            for t in range(5):
                templates[k, np.clip(r0 + dr * t, 1, 8), np.clip(c0 + dc * t, 1, 8)] = 16.0
    draw = np.random.default_rng(seed + 1)
    labels = draw.integers(0, 10, n)
    shifts = draw.integers(0, 3, (n, 2))
    images = np.stack([templates[y, r:r + 8, c:c + 8] for y, (r, c) in zip(labels, shifts)])
    images = np.clip(images + draw.normal(0, 2.0, images.shape), 0, 16)
    return images, labels


def load_digits(seed: int = 0, test_fraction: float = 0.2):
    """(x_train, y_train, x_test, y_test) as numpy arrays: float32 images in [0, 1] shaped
    (N, 1, 8, 8), int64 labels -- scikit-learn's digits, or ``synthetic_digits`` where
    scikit-learn is not installed."""
    try:
        # optional: scikit-learn (ember[demo])
        from sklearn.datasets import load_digits as sk_load_digits
    except ImportError:
        images, target = synthetic_digits(seed=seed)
    else:
        data = sk_load_digits()
        images, target = data.images, data.target
    x = (images.astype(np.float32) / 16.0)[:, None, :, :]
    y = target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    n_test = int(len(y) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


def make_model():
    return nn.Sequential(
        nn.Conv2d(1, 16, kernel_size=3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 4 * 4, 64),
        nn.ReLU(),
        nn.Linear(64, 10),
    )


def train_on(device, data, *, epochs, batch_size, lr, seed, task=None) -> RunResult:
    """Train the model on ``device``; ``task`` (an ``ember.utils.progress`` task) counts the
    steps."""

    x_train, y_train, x_test, y_test = data
    result = RunResult(str(device))
    ember.manual_seed(seed)
    model = make_model().to(device)       # same initial weights on every device
    opt = ember.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    xs = ember.tensor(x_train, device=device)
    ys = ember.tensor(y_train, device=device)
    n = len(y_train)
    shuffles = np.random.default_rng(seed)
    steps, elapsed = 0, 0.0
    model.train()
    for _ in range(epochs):
        order = ember.tensor(shuffles.permutation(n), device=device)
        for start in range(0, n, batch_size):
            idx = order[start:start + batch_size]
            t0 = time.perf_counter()
            loss = loss_fn(model(xs[idx]), ys[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            value = loss.item()           # one sync per step, as a training loop that logs does
            elapsed += time.perf_counter() - t0
            steps += 1
            result.losses.append(value)
            if task is not None:
                task.advance(note=f"loss {value:.3f}")
    model.eval()
    with ember.no_grad():
        logits = model(ember.tensor(x_test, device=device))
        pred = logits.argmax(dim=1).cpu().numpy()
    result.predictions = pred
    result.test_accuracy = float((pred == y_test).mean())
    result.ms_per_step = 1e3 * elapsed / max(steps, 1)
    return result


def agreement(reference: RunResult, other: RunResult) -> tuple[bool, str]:
    """Whether ``other`` trained like ``reference``: loss curves within tolerance, and the
    test predictions nearly identical."""
    a, b = np.asarray(reference.losses), np.asarray(other.losses)
    if a.shape != b.shape:
        return False, "different number of steps"
    worst = float(np.max(np.abs(a - b) / (AGREE_ATOL + AGREE_RTOL * np.abs(a)))) if a.size else 0.0
    same_pred = float((reference.predictions == other.predictions).mean())
    ok = worst <= 1.0 and same_pred >= 0.98
    return ok, f"max loss diff {float(np.max(np.abs(a - b))):.1e}, {same_pred:.1%} same predictions"


def demo_devices(requested=None):
    """Devices to train on: index 0 of every available backend that holds data (or the
    requested backend names, in order)."""
    names = requested or registry.names()
    devices, skipped = [], []
    for name in names:
        reason = registry.unavailable_reason(name)
        if reason is not None:
            skipped.append((name, reason))
            continue
        backend = registry.get(name)
        if not backend.has_data:
            skipped.append((name, "tensors on this device hold no data"))
            continue
        devices.append(f"{name}:0")
    return devices, skipped


def _verdicts(results, devices):
    """(device, final loss, accuracy, ms/step, verdict, ok) per result."""
    reference = results[0]
    rows, all_agree = [], reference.error is None
    for r in results:
        if r.error is not None:
            rows.append((r.device, "-", "-", "-", f"failed: {r.error}", False))
            all_agree = False
            continue
        if r is reference:
            verdict, ok = "(reference)", True
        elif reference.error is not None:
            verdict, ok = "-", True
        else:
            ok, detail = agreement(reference, r)
            all_agree &= ok
            verdict = f"{'yes' if ok else 'NO'} ({detail})"
        rows.append((r.device, f"{r.losses[-1]:.4f}", f"{r.test_accuracy:.1%}",
                     f"{r.ms_per_step:.2f}", verdict, ok))
    return rows, all_agree


def run(args) -> int:

    # start-up: rich (~50 ms), for the demo's table
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text


    console = Console()
    plain = not console.is_terminal
    say = print if plain else (lambda text, style=None: console.print(Text(text, style=style)))
    data = load_digits(seed=args.seed)
    if importlib.util.find_spec("sklearn") is None:
        console.print("[yellow]scikit-learn is not installed: training on synthetic 8x8 digits "
                      "(pip install 'ember[demo]' for the real ones)[/]")
    requested = [b.strip() for b in args.backends.split(",")] if args.backends else None
    devices, skipped = demo_devices(requested)
    for name, reason in skipped:
        say(f"skipping {name}: {reason}", *(() if plain else ("yellow",)))
    if not devices:
        say("no backend available to train on", *(() if plain else ("red",)))
        return 1
    steps = args.epochs * -(-len(data[1]) // args.batch_size)
    say(f"digits: {len(data[1])} train / {len(data[3])} test images; "
        f"{args.epochs} epochs × batch {args.batch_size} = {steps} SGD steps per device")
    results = []
    with Progress("demo") as progress:
        for device in devices:
            task = progress.task(device, total=steps)
            with warnings.catch_warnings():
                # a backend's CPU-fallback notices would break the progress display
                warnings.simplefilter("ignore")
                try:
                    results.append(train_on(device, data, epochs=args.epochs,
                                            batch_size=args.batch_size, lr=args.lr,
                                            seed=args.seed, task=task))
                except Exception as e:  # one broken backend must not hide the others' results
                    results.append(RunResult(device, error=f"{type(e).__name__}: {e}"))
            task.done()
    rows, all_agree = _verdicts(results, devices)
    title = "ember demo — digits classifier, same weights and batches everywhere"
    columns = ("device", "final loss", "test accuracy", "ms/step", "agrees with " + devices[0])
    if plain:
        print(title)
        for row in rows:
            print("  ".join(f"{col}: {cell}" if i else cell
                            for i, (col, cell) in enumerate(zip(columns, row[:5]))))
    else:
        table = Table(title=title)
        for col in columns:
            table.add_column(col)
        for *cells, ok in rows:
            style = "green" if ok and cells[4].startswith("yes") else None if ok else "red"
            table.add_row(*(Text(c) for c in cells[:4]), Text(cells[4], style=style))
        console.print(table)
    return 0 if all_agree else 1
