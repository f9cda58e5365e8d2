"""How each vendored program's training step is set up and run (bench/bench_programs.py).

``setup(load, lib, device)`` builds one program's model, data and optimizer and returns the
step: a callable running one training step with the program's own code. ``lib`` is the module
the program imported as ``torch`` (real torch, or ember under torch's name), ``load(name,
**preset)`` loads ``real_programs/<name>.py`` with that library and the given module globals
(what the trimmed command-line part used to set: ``args``, ``device``, loaders). Data are
synthetic, of the shapes the programs train on (sizes chosen so that a step takes milliseconds
on one core), made from one numpy seed so both libraries see the same values.

Where a program's step was a loop body at module level (regression, DCGAN, makemore, nanoGPT's
train.py), the step below is that body, line for line, with the loop variables fixed.
"""
from __future__ import annotations

import math
import os
import tempfile
from argparse import Namespace
from dataclasses import dataclass

import numpy as np


@dataclass
class Program:
    name: str
    kind: str            # "small-op" (per-op overhead bound) or "kernel" (big kernels)
    setup: object
    cpu_only: bool = False   # the program builds inputs with torch.from_numpy and never moves
                             # them: it runs on the CPU only, in torch as in ember
    what: str = ""
    default_device: bool = False   # written for the CPU (tensors made without a device): on
                                   # another device it runs under set_default_device


PROGRAMS: dict = {}


def program(name, kind, what, cpu_only=False, default_device=False):
    def register(setup):
        PROGRAMS[name] = Program(name, kind, setup, cpu_only, what, default_device)
        return setup
    return register


class OneBatch(list):
    """A loader yielding one batch, with the ``.dataset`` length the programs print."""

    def __init__(self, batch, dataset_len):
        super().__init__([batch])
        self.dataset = range(dataset_len)


def _rng(seed=0):
    return np.random.default_rng(seed)


def _images(lib, shape, classes=10, seed=0, unit=False):
    rng = _rng(seed)
    x = rng.random(shape, dtype=np.float32) if unit else \
        rng.standard_normal(shape, dtype=np.float32)
    y = rng.integers(0, classes, shape[0])
    return lib.from_numpy(x), lib.from_numpy(y)


class CartPole:
    """CartPole-v1's dynamics (gymnasium's equations, Euler integration) in numpy, so the RL
    programs run without gym. Episodes have a fixed length: a fallen pole restarts the pole
    without ending the episode, so every step times the same amount of work."""

    def __init__(self, seed=543):
        self.rng = np.random.default_rng(seed)
        self.state = None

    def reset(self):
        self.state = self.rng.uniform(-0.05, 0.05, size=4)
        return self.state.astype(np.float32), {}

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = 10.0 if action == 1 else -10.0
        cos, sin = math.cos(theta), math.sin(theta)
        temp = (force + 0.05 * theta_dot ** 2 * sin) / 1.1
        theta_acc = (9.8 * sin - cos * temp) / (0.5 * (4.0 / 3.0 - 0.1 * cos ** 2 / 1.1))
        x_acc = temp - 0.05 * theta_acc * cos / 1.1
        self.state = np.array([x + 0.02 * x_dot, x_dot + 0.02 * x_acc,
                               theta + 0.02 * theta_dot, theta_dot + 0.02 * theta_acc])
        terminated = abs(self.state[0]) > 2.4 or abs(self.state[2]) > 0.2095
        if terminated:
            self.reset()
        return self.state.astype(np.float32), 1.0, bool(terminated), False, {}


# -- kernel-bound programs ---------------------------------------------------------------------
@program("mnist_cnn", "kernel", "pytorch/examples mnist: 2 convs + 2 linears, Adadelta, batch 64")
def mnist_cnn(load, lib, device):
    mod = load("mnist_cnn")
    model = mod.Net().to(device)
    optimizer = lib.optim.Adadelta(model.parameters(), lr=1.0)
    loader = OneBatch(_images(lib, (64, 1, 28, 28)), 60000)
    args = Namespace(log_interval=10, dry_run=False)
    return lambda: mod.train(args, model, device, loader, optimizer, 1)


@program("resnet18_cifar", "kernel", "kuangliu/pytorch-cifar ResNet18, SGD, batch 8 3x32x32")
def resnet18_cifar(load, lib, device):
    mod = load("resnet18_cifar")
    mod.net = mod.ResNet18().to(device)
    mod.device = device
    mod.criterion = lib.nn.CrossEntropyLoss()
    mod.optimizer = lib.optim.SGD(mod.net.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    mod.trainloader = OneBatch(_images(lib, (8, 3, 32, 32)), 50000)
    mod.progress_bar = lambda *args, **kwargs: None   # utils.py's terminal progress bar
    return lambda: mod.train(0)


@program("super_resolution", "kernel",
         "pytorch/examples super_resolution: 4 convs + pixel shuffle, Adam, batch 4 32x32 -> 96x96")
def super_resolution(load, lib, device):
    rng = _rng()
    x = lib.from_numpy(rng.random((4, 1, 32, 32), dtype=np.float32))
    y = lib.from_numpy(rng.random((4, 1, 96, 96), dtype=np.float32))
    mod = load("super_resolution", device=device,
               training_data_loader=OneBatch((x, y), 200))
    mod.model = mod.Net(upscale_factor=3).to(device)
    mod.criterion = lib.nn.MSELoss()
    mod.optimizer = lib.optim.Adam(mod.model.parameters(), lr=0.01)
    return lambda: mod.train(1)


@program("dcgan", "kernel",
         "pytorch/examples dcgan: ConvTranspose/BatchNorm generator and discriminator, 64x64, "
         "widths 16, batch 16")
def dcgan(load, lib, device):
    opt = Namespace(ngpu=1, nz=100, ngf=16, ndf=16, batchSize=16, lr=0.0002, beta1=0.5,
                    netG="", netD="", niter=1, dry_run=False)
    mod = load("dcgan", opt=opt, device=device, nc=3)
    real = lib.from_numpy(_rng().uniform(-1, 1, (16, 3, 64, 64)).astype(np.float32))
    data = (real, None)
    torch, nz, netD, netG, criterion = lib, mod.nz, mod.netD, mod.netG, mod.criterion
    optimizerD, optimizerG = mod.optimizerD, mod.optimizerG
    real_label, fake_label = mod.real_label, mod.fake_label
    epoch, i, dataloader = 0, 0, [data]

    def step():
        # the body of dcgan/main.py's loop over batches, lines 224-266
        netD.zero_grad()
        real_cpu = data[0].to(device)
        batch_size = real_cpu.size(0)
        label = torch.full((batch_size,), real_label,
                           dtype=real_cpu.dtype, device=device)

        output = netD(real_cpu)
        errD_real = criterion(output, label)
        errD_real.backward()
        D_x = output.mean().item()

        # train with fake
        noise = torch.randn(batch_size, nz, 1, 1, device=device)
        fake = netG(noise)
        label.fill_(fake_label)
        output = netD(fake.detach())
        errD_fake = criterion(output, label)
        errD_fake.backward()
        D_G_z1 = output.mean().item()
        errD = errD_real + errD_fake
        optimizerD.step()

        netG.zero_grad()
        label.fill_(real_label)  # fake labels are real for generator cost
        output = netD(fake)
        errG = criterion(output, label)
        errG.backward()
        D_G_z2 = output.mean().item()
        optimizerG.step()

        print('[%d/%d][%d/%d] Loss_D: %.4f Loss_G: %.4f D(x): %.4f D(G(z)): %.4f / %.4f'
              % (epoch, opt.niter, i, len(dataloader),
                 errD.item(), errG.item(), D_x, D_G_z1, D_G_z2))
    return step


def _cora(tmp, nodes, features, edges, classes=7, seed=0):
    """A synthetic graph in Cora's file format (cora.content: id, binary features, label;
    cora.cites: id pairs) for the programs' own load_cora."""
    rng = _rng(seed)
    path = os.path.join(tmp, "cora")
    os.makedirs(path, exist_ok=True)
    ids = rng.choice(10 * nodes, nodes, replace=False)
    feats = (rng.random((nodes, features)) < 0.02).astype(np.int32)
    feats[:, 0] = 1   # no empty rows: load_cora divides by the row sums
    labels = [f"c{k}" for k in rng.integers(0, classes, nodes)]
    with open(os.path.join(path, "cora.content"), "w") as f:
        for i in range(nodes):
            f.write(f"{ids[i]}\t" + "\t".join(map(str, feats[i])) + f"\t{labels[i]}\n")
    src = rng.integers(0, nodes, edges)
    dst = (src + rng.integers(1, nodes, edges)) % nodes
    pairs = sorted({(int(a), int(b)) for a, b in zip(src, dst)})
    with open(os.path.join(path, "cora.cites"), "w") as f:
        for a, b in pairs:
            f.write(f"{ids[a]}\t{ids[b]}\n")
    return path


_CORA = {}


def _graph_data(lib, mod, device, nodes, features, edges):
    key = (nodes, features, edges)
    if key not in _CORA:
        _CORA[key] = _cora(tempfile.mkdtemp(prefix="ember-bench-cora-"), *key)
    features_t, labels, adj = mod.load_cora(_CORA[key], device=device)
    idx = lib.from_numpy(_rng(1).permutation(nodes)).to(device)
    n_test, n_val = nodes * 1000 // 2708, nodes * 500 // 2708
    return features_t, labels, adj, idx[n_test + n_val:], idx[n_test:n_test + n_val]


@program("gcn", "small-op", "pytorch/examples gcn: 2 GraphConv layers over a sparse normalised "
         "adjacency (synthetic graph, Cora's sizes), Adam")
def gcn(load, lib, device):
    mod = load("gcn")
    features, labels, adj, idx_train, idx_val = _graph_data(lib, mod, device, 2708, 1433, 5429)
    model = mod.GCN(features.shape[1], 16, int(labels.max().item()) + 1, False, 0.5).to(device)
    optimizer = lib.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    criterion = lib.nn.NLLLoss()
    return lambda: mod.train_iter(1, model, optimizer, criterion, (features, adj), labels,
                                  idx_train, idx_val, 20)


@program("gat", "kernel", "pytorch/examples gat: 2 graph-attention layers (8 heads, dense "
         "masked attention), synthetic 500-node graph, Adam")
def gat(load, lib, device):
    mod = load("gat")
    features, labels, adj, idx_train, idx_val = _graph_data(lib, mod, device, 500, 300, 1500)
    model = mod.GAT(in_features=features.shape[1], n_hidden=64, n_heads=8,
                    num_classes=int(labels.max().item()) + 1, concat=False, dropout=0.6,
                    leaky_relu_slope=0.2).to(device)
    optimizer = lib.optim.Adam(model.parameters(), lr=0.005, weight_decay=5e-4)
    criterion = lib.nn.NLLLoss()
    return lambda: mod.train_iter(1, model, optimizer, criterion, (features, adj), labels,
                                  idx_train, idx_val, 20)


# -- small-op-bound programs -------------------------------------------------------------------
@program("mnist_rnn", "small-op", "pytorch/examples mnist_rnn: nn.LSTM over 28 rows + "
         "BatchNorm1d + 2 linears, Adadelta, batch 64")
def mnist_rnn(load, lib, device):
    mod = load("mnist_rnn")
    model = mod.Net().to(device)
    optimizer = lib.optim.Adadelta(model.parameters(), lr=0.1)
    loader = OneBatch(_images(lib, (64, 1, 28, 28)), 60000)
    args = Namespace(log_interval=10, dry_run=False)
    return lambda: mod.train(args, model, device, loader, optimizer, 1)


@program("time_sequence_prediction", "small-op",
         "pytorch/examples time_sequence_prediction: two LSTMCells unrolled over 20 steps "
         "(float64), LBFGS (up to 20 evaluations per step)", default_device=True)
def time_sequence_prediction(load, lib, device):
    torch = lib
    mod = load("time_sequence_prediction")
    # generate_sine_wave.py's data, fewer and shorter sequences
    rng = _rng()
    x = np.arange(21) + rng.integers(-40, 40, (4, 1))
    data = np.sin(x / 20.0).astype(np.float64)
    input = torch.from_numpy(data[:, :-1]).to(device)
    target = torch.from_numpy(data[:, 1:]).to(device)
    seq = mod.Sequence().to(device)
    seq.double()
    criterion = torch.nn.MSELoss()
    optimizer = torch.optim.LBFGS(seq.parameters(), lr=0.8)
    # LBFGS stops evaluating once the loss stops changing (after ~15 steps: one evaluation a
    # step instead of 20), at a different step on each library (their initial weights differ):
    # every timed step starts from the same weights and a fresh optimizer, so it does the same
    # work
    start = {k: v.clone() for k, v in seq.state_dict().items()}
    fresh = optimizer.state_dict()

    def step():
        seq.load_state_dict(start)
        optimizer.load_state_dict(fresh)

        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            print('loss:', loss.item())
            loss.backward()
            return loss
        optimizer.step(closure)
    return step


def _episode(mod, env, store, length=40):
    """reinforce.py's / actor_critic.py's main() for one episode of fixed length."""
    state, _ = env.reset()
    for t in range(1, length + 1):
        action = mod.select_action(state)
        state, reward, terminated, truncated, _ = env.step(action)
        store.rewards.append(reward)
    mod.finish_episode()


@program("reinforce", "small-op", "pytorch/examples reinforcement_learning/reinforce.py: "
         "policy gradient, a 4-128-2 policy sampled per step, 40-step CartPole episodes",
         cpu_only=True)
def reinforce(load, lib, device):
    mod = load("reinforce", args=Namespace(gamma=0.99))
    env = CartPole()
    return lambda: _episode(mod, env, mod.policy)


@program("actor_critic", "small-op", "pytorch/examples reinforcement_learning/actor_critic.py: "
         "actor-critic, 4-128-(2,1) heads, 40-step CartPole episodes", cpu_only=True)
def actor_critic(load, lib, device):
    mod = load("actor_critic", args=Namespace(gamma=0.99))
    env = CartPole()
    return lambda: _episode(mod, env, mod.model)


@program("dqn", "small-op", "seungeunrho/minimalRL dqn.py: train() = 10 minibatch updates of a "
         "4-128-128-2 Q-network from a replay buffer of CartPole transitions, Adam",
         default_device=True)
def dqn(load, lib, device):
    mod = load("dqn")
    q, q_target = mod.Qnet().to(device), mod.Qnet().to(device)
    q_target.load_state_dict(q.state_dict())
    memory = mod.ReplayBuffer()
    env = CartPole(0)
    s, _ = env.reset()
    rng = _rng()
    for _ in range(2000):
        a = int(rng.integers(0, 2))
        s_prime, r, done, truncated, info = env.step(a)
        memory.put((s, a, r / 100.0, s_prime, 0.0 if done else 1.0))
        s = s_prime
    optimizer = lib.optim.Adam(q.parameters(), lr=mod.learning_rate)
    import random
    random.seed(0)
    return lambda: mod.train(q, q_target, memory, optimizer)


@program("regression", "small-op", "pytorch/examples regression: a 4-feature linear fit, "
         "smooth L1, manual SGD through param.data", default_device=True)
def regression(load, lib, device):
    mod = load("regression")
    F = lib.nn.functional
    mod.fc.to(device)

    def step():
        # the body of regression/main.py's loop, lines 45-62
        batch_x, batch_y = mod.get_batch()
        mod.fc.zero_grad()
        output = F.smooth_l1_loss(mod.fc(batch_x), batch_y)
        loss = output.item()
        output.backward()
        for param in mod.fc.parameters():
            param.data.add_(-0.1 * param.grad)
    return step


@program("vae", "small-op", "pytorch/examples vae: 784-400-(20,20)-400-784 MLP VAE, BCE + KL, "
         "Adam, batch 128")
def vae(load, lib, device):
    data = _images(lib, (128, 1, 28, 28), unit=True)
    mod = load("vae", args=Namespace(batch_size=128, log_interval=10), device=device,
               train_loader=OneBatch(data, 60000))
    return lambda: mod.train(1)


@program("mnist_forward_forward", "small-op",
         "pytorch/examples mnist_forward_forward: Hinton's forward-forward, two 784-500-500 "
         "layers trained locally, 2 epochs each on 500 samples")
def mnist_forward_forward(load, lib, device):
    mod = load("mnist_forward_forward",
               args=Namespace(lr=0.03, threshold=2.0, epochs=2, log_interval=10),
               device=device)
    x, y = _images(lib, (500, 784))
    x, y = x.to(device), y.to(device)
    net = mod.Net([784, 500, 500])
    x_pos = mod.overlay_y_on_x(x, y)
    x_neg = mod.overlay_y_on_x(x, mod.get_y_neg(y))
    return lambda: net.train(x_pos, x_neg)


def _word_lm(load, lib, device, model_type):
    ntokens, bptt, batch_size = 2000, 35, 20
    args = Namespace(model=model_type, bptt=bptt, batch_size=batch_size, clip=0.25,
                     log_interval=200, dry_run=False, use_optimizer=False)
    corpus = Namespace(dictionary=range(ntokens))
    tokens = lib.from_numpy(_rng().integers(0, ntokens, (bptt + 1, batch_size)))
    mod = load("word_language_model", args=args, corpus=corpus, lr=20.0, epoch=1,
               train_data=tokens.to(device), criterion=lib.nn.NLLLoss())
    if model_type == "Transformer":
        mod.model = mod.TransformerModel(ntokens, 200, 2, 200, 2, 0.2).to(device)
    else:
        mod.model = mod.RNNModel(model_type, ntokens, 200, 200, 2, 0.2, False).to(device)
    return mod.train


@program("word_lm_lstm", "small-op", "pytorch/examples word_language_model --model LSTM: "
         "2-layer nn.LSTM 200, bptt 35, batch 20, a 2000-word vocabulary, clip + manual SGD")
def word_lm_lstm(load, lib, device):
    return _word_lm(load, lib, device, "LSTM")


@program("word_lm_transformer", "kernel", "pytorch/examples word_language_model --model "
         "Transformer: 2 encoder layers, 2 heads, d=200, bptt 35, batch 20, 2000 words")
def word_lm_transformer(load, lib, device):
    return _word_lm(load, lib, device, "Transformer")


def _makemore(load, lib, device, kind):
    torch = lib
    mod = load("makemore")
    config = mod.ModelConfig(vocab_size=27, block_size=16, n_layer=4, n_head=4, n_embd=64,
                             n_embd2=64)
    model = {"transformer": mod.Transformer, "mlp": mod.MLP, "bow": mod.BoW}[kind](config) \
        if kind in ("transformer", "mlp", "bow") else mod.RNN(config, cell_type=kind)
    model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.01,
                                  betas=(0.9, 0.99), eps=1e-8)
    rng = _rng()
    x = torch.from_numpy(rng.integers(0, 27, (32, 16)))
    y = torch.from_numpy(np.concatenate([x.numpy()[:, 1:], np.full((32, 1), -1)], 1))
    batch_loader = Namespace(next=lambda: [x, y])
    state = {"step": 0}

    def step():
        # the body of makemore.py's training loop, lines 680-702
        batch = batch_loader.next()
        batch = [t.to(device) for t in batch]
        X, Y = batch
        logits, loss = model(X, Y)
        model.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if state["step"] % 10 == 0:
            print(f"step {state['step']} | loss {loss.item():.4f}")
        state["step"] += 1
    return step


@program("makemore_rnn", "small-op", "karpathy/makemore --type rnn: a hand-written RNN cell "
         "unrolled over 16 characters, n_embd 64, batch 32, AdamW")
def makemore_rnn(load, lib, device):
    return _makemore(load, lib, device, "rnn")


@program("makemore_gru", "small-op", "karpathy/makemore --type gru: a hand-written GRU cell "
         "unrolled over 16 characters, n_embd 64, batch 32, AdamW")
def makemore_gru(load, lib, device):
    return _makemore(load, lib, device, "gru")


@program("makemore_transformer", "small-op", "karpathy/makemore --type transformer: 4 GPT-2 "
         "blocks of width 64 written out (attention by matmul/mask/softmax), block 16, batch 32")
def makemore_transformer(load, lib, device):
    return _makemore(load, lib, device, "transformer")


@program("nanogpt", "kernel", "karpathy/nanoGPT model.py + train.py's step: 4 layers, 4 heads, "
         "width 128, block 64, batch 8 (scaled_dot_product_attention), AdamW, grad clipping")
def nanogpt(load, lib, device):
    torch = lib
    tmp = tempfile.mkdtemp(prefix="ember-bench-nanogpt-")
    _rng().integers(0, 65, 20000).astype(np.uint16).tofile(os.path.join(tmp, "train.bin"))
    device_type = "cpu"   # train.py: no autocast, a disabled GradScaler
    mod = load("nanogpt", data_dir=tmp, block_size=64, batch_size=8, device=device,
               device_type=device_type)
    config = mod.GPTConfig(block_size=64, vocab_size=65, n_layer=4, n_head=4, n_embd=128,
                           dropout=0.0, bias=False)
    model = mod.GPT(config).to(device)
    optimizer = model.configure_optimizers(1e-1, 1e-3, (0.9, 0.99), device_type)
    scaler = torch.amp.GradScaler(device_type, enabled=False)
    ctx = mod.nullcontext()
    gradient_accumulation_steps, grad_clip, get_batch = 1, 1.0, mod.get_batch
    state = {"X": get_batch("train"), "iter": 0}

    def step():
        # the body of train.py's loop, lines 292-313 (no DDP)
        X, Y = state["X"]
        for micro_step in range(gradient_accumulation_steps):
            with ctx:
                logits, loss = model(X, Y)
                loss = loss / gradient_accumulation_steps
            X, Y = get_batch('train')
            scaler.scale(loss).backward()
        if grad_clip != 0.0:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        state["X"] = (X, Y)
        if state["iter"] % 10 == 0:
            lossf = loss.item() * gradient_accumulation_steps
        state["iter"] += 1
    return step
