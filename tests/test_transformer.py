"""nn.MultiheadAttention, F.multi_head_attention_forward and the nn.Transformer family: torch's
parameter names (state_dicts load as they are), options, errors; outputs and gradients against
torch when it is installed, and OpenCL against the CPU."""
import importlib.util
import pathlib
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.testing import assert_close

RNG = np.random.default_rng(3)
ROOT = pathlib.Path(__file__).resolve().parents[1]


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def load_from_torch(module, torch_module):
    sd = {k: ember.tensor(v.detach().numpy()) for k, v in torch_module.state_dict().items()}
    assert sorted(module.state_dict()) == sorted(sd)
    module.load_state_dict(sd)


def close(a, b, tol=2e-5):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


def grads_close(em, tm, tol=5e-5):
    tp = dict(tm.named_parameters())
    for name, p in em.named_parameters():
        close(p.grad, tp[name].grad, tol)


# -- MultiheadAttention -------------------------------------------------------------------------
def test_state_dict_names_are_torchs():
    assert list(nn.MultiheadAttention(12, 3).state_dict()) == [
        "in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]
    assert list(nn.MultiheadAttention(12, 3, kdim=5, vdim=7).state_dict()) == [
        "q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias", "out_proj.weight",
        "out_proj.bias"]
    assert list(nn.MultiheadAttention(12, 3, bias=False, add_bias_kv=True).state_dict()) == [
        "in_proj_weight", "bias_k", "bias_v", "out_proj.weight"]
    m = nn.MultiheadAttention(12, 3)
    assert float(m.in_proj_bias.abs().sum()) == 0.0 and float(m.out_proj.bias.abs().sum()) == 0
    assert repr(m) == ("MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear("
                       "in_features=12, out_features=12, bias=True)\n)")


def test_constructor_errors():
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(10, 3)
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0, got "
                                         "embed_dim=0 and num_heads=2 instead"):
        nn.MultiheadAttention(0, 2)


def test_forward_errors():
    m = nn.MultiheadAttention(12, 3)
    x = ember.tensor(randn(4, 2, 12))
    with pytest.raises(AssertionError, match=r"expected `key` and `value` to be 3-D but found "
                                             r"2-D and 3-D"):
        m(x, x[0], x)
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 12, but got 8"):
        y = ember.tensor(randn(4, 2, 8))
        m(y, y, y)
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is ember.Size\(\[4, "
                                           r"3\]\), but should be \(4, 4\)"):
        m(x, x, x, attn_mask=ember.zeros(4, 3))
    with pytest.raises(AssertionError, match="only bool and floating types of attn_mask"):
        m(x, x, x, attn_mask=ember.zeros(4, 4, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        m(x, x, x, is_causal=True)
    with pytest.raises(AssertionError, match=r"Expected key_padded_mask.shape\[1\] to be 4, but "
                                             r"got 3"):
        m(x, x, x, key_padding_mask=ember.zeros(2, 3, dtype=ember.bool))


MHA_OPTIONS = [{}, {"bias": False}, {"add_bias_kv": True}, {"add_zero_attn": True},
               {"kdim": 5, "vdim": 7}, {"batch_first": True},
               {"add_bias_kv": True, "add_zero_attn": True, "kdim": 5, "vdim": 3,
                "batch_first": True}]
MHA_CALLS = ["default", "no-weights", "padding", "float-mask-per-head-weights",
             "bool-mask+padding", "causal-hint", "unbatched"]


def _mha_inputs(opts, call, lib):
    kd, vd = opts.get("kdim", 12), opts.get("vdim", 12)
    L, S, N = 4, 6, 2
    bf = opts.get("batch_first", False)
    shapes = [(L, 12), (S, kd), (S, vd)] if call == "unbatched" else \
        [(N, L, 12), (N, S, kd), (N, S, vd)] if bf else [(L, N, 12), (S, N, kd), (S, N, vd)]
    rng = np.random.default_rng(hash(call) % 1000)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    padding = rng.random((N, S)) > 0.7
    padding[:, 0] = False
    kw = {"no-weights": dict(need_weights=False),
          "padding": dict(key_padding_mask=padding),
          "float-mask-per-head-weights": dict(attn_mask=rng.standard_normal((L, S)).astype(
              np.float32), average_attn_weights=False),
          "bool-mask+padding": dict(attn_mask=rng.random((L, S)) > 0.8,
                                    key_padding_mask=padding, need_weights=False),
          "causal-hint": dict(attn_mask=np.triu(np.full((L, S), -np.inf, np.float32), 1),
                              is_causal=True, need_weights=False)}.get(call, {})
    tensors = [lib.tensor(a, requires_grad=True) for a in arrays]
    return tensors, {k: lib.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}


@pytest.mark.parametrize("call", MHA_CALLS)
@pytest.mark.parametrize("opts", MHA_OPTIONS, ids=lambda o: "-".join(o) or "default")
def test_multihead_attention_matches_torch(opts, call):
    torch = pytest.importorskip("torch")
    tm = torch.nn.MultiheadAttention(12, 3, **opts)
    em = nn.MultiheadAttention(12, 3, **opts)
    load_from_torch(em, tm)
    ein, ekw = _mha_inputs(opts, call, ember)
    tin, tkw = _mha_inputs(opts, call, torch)
    eo, ew = em(*ein, **ekw)
    to, tw = tm(*tin, **tkw)
    close(eo, to)
    assert (ew is None) == (tw is None)
    if tw is not None:
        assert tuple(ew.shape) == tuple(tw.shape)
        close(ew, tw)
    (eo * eo).sum().backward()
    (to * to).sum().backward()
    for a, b in zip(ein, tin):
        close(a.grad, b.grad, 5e-5)
    grads_close(em, tm)


def test_functional_multi_head_attention_forward_matches_torch():
    torch = pytest.importorskip("torch")
    tm = torch.nn.MultiheadAttention(8, 2)
    arrays = [randn(3, 2, 8), randn(5, 2, 8), randn(5, 2, 8)]
    static_k, static_v = randn(4, 6, 4), randn(4, 6, 4)

    def run(lib, F_, mod):
        q, k, v = (lib.tensor(a) for a in arrays)
        return F_.multi_head_attention_forward(
            q, k, v, 8, 2, mod.in_proj_weight, mod.in_proj_bias, None, None, False, 0.0,
            mod.out_proj.weight, mod.out_proj.bias, training=False, static_k=lib.tensor(
                static_k), static_v=lib.tensor(static_v))
    em = nn.MultiheadAttention(8, 2)
    load_from_torch(em, tm)
    (eo, ew), (to, tw) = run(ember, F, em), run(torch, torch.nn.functional, tm)
    close(eo, to)
    close(ew, tw)


def test_multihead_attention_dropout_uses_the_device_generator():
    m = nn.MultiheadAttention(8, 2, dropout=0.5)
    x = ember.tensor(randn(5, 3, 8))
    ember.manual_seed(0)
    a, _ = m(x, x, x, need_weights=False)
    ember.manual_seed(0)
    b, _ = m(x, x, x, need_weights=False)
    assert_close(a, b)
    m.eval()
    c, _ = m(x, x, x, need_weights=False)
    d, _ = m(x, x, x, need_weights=False)
    assert_close(c, d)
    assert not np.allclose(a.detach().numpy(), c.detach().numpy())


# -- the Transformer family ----------------------------------------------------------------------
TRANSFORMER_OPTIONS = [{}, {"norm_first": True, "activation": "gelu"},
                       {"batch_first": True, "bias": False, "layer_norm_eps": 1e-3},
                       {"activation": "silu-callable"}]


def _options(opts, lib, F_):
    out = dict(opts)
    if out.get("activation") == "silu-callable":
        out["activation"] = F_.silu
    return out


@pytest.mark.parametrize("opts", TRANSFORMER_OPTIONS,
                         ids=["default", "norm-first-gelu", "batch-first-no-bias-eps",
                              "callable-activation"])
def test_transformer_matches_torch(opts):
    torch = pytest.importorskip("torch")
    size = dict(d_model=16, nhead=4, num_encoder_layers=2, num_decoder_layers=2,
                dim_feedforward=32, dropout=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # enable_nested_tensor's notes
        tm = torch.nn.Transformer(**size, **_options(opts, torch, torch.nn.functional))
        em = nn.Transformer(**size, **_options(opts, ember, F))
    load_from_torch(em, tm)
    bf = opts.get("batch_first", False)
    S, T, N = 5, 4, 3
    src, tgt = (randn(N, S, 16), randn(N, T, 16)) if bf else (randn(S, N, 16), randn(T, N, 16))
    pad = RNG.random((N, S)) > 0.7
    pad[:, 0] = False
    ein = [ember.tensor(a, requires_grad=True) for a in (src, tgt)]
    tin = [torch.tensor(a, requires_grad=True) for a in (src, tgt)]
    emask = nn.Transformer.generate_square_subsequent_mask(T)
    tmask = torch.nn.Transformer.generate_square_subsequent_mask(T)
    np.testing.assert_array_equal(emask.numpy(), tmask.numpy())
    eo = em(*ein, tgt_mask=emask, src_key_padding_mask=ember.tensor(pad),
            memory_key_padding_mask=ember.tensor(pad))
    to = tm(*tin, tgt_mask=tmask, src_key_padding_mask=torch.tensor(pad),
            memory_key_padding_mask=torch.tensor(pad))
    close(eo, to, 5e-5)
    (eo * eo).sum().backward()
    (to * to).sum().backward()
    for a, b in zip(ein, tin):
        close(a.grad, b.grad, 5e-5)
    grads_close(em, tm, 1e-4)
    # inference: the causal hint, and no gradient
    em.eval(), tm.eval()
    with ember.no_grad(), torch.no_grad():
        close(em(ember.tensor(src), ember.tensor(tgt), tgt_mask=emask, tgt_is_causal=True),
              tm(torch.tensor(src), torch.tensor(tgt), tgt_mask=tmask, tgt_is_causal=True),
              5e-5)


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
@pytest.mark.parametrize("padding", ["right", "anywhere"])
def test_encoder_inference_with_padding_matches_torchs_nested_path(padding):
    """torch packs a right-padded batch into nested tensors in inference: padded positions leave
    the layers as zeros. ember gives the same output."""
    torch = pytest.importorskip("torch")
    tl = torch.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
    tm = torch.nn.TransformerEncoder(tl, 2, norm=torch.nn.LayerNorm(16))
    em = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0,
                                                          batch_first=True), 2,
                               norm=nn.LayerNorm(16))
    assert tm.use_nested_tensor and em.use_nested_tensor
    load_from_torch(em, tm)
    em.eval(), tm.eval()
    src = randn(3, 5, 16)
    pad = np.zeros((3, 5), bool)
    pad[0, 3:], pad[1, 4:] = True, True
    if padding == "anywhere":
        pad[2, 1] = True
    with ember.no_grad(), torch.no_grad():
        close(em(ember.tensor(src), src_key_padding_mask=ember.tensor(pad)),
              tm(torch.tensor(src), src_key_padding_mask=torch.tensor(pad)), 5e-5)


def test_encoder_says_why_nested_tensors_are_off():
    layer = nn.TransformerEncoderLayer(16, 4, 32, batch_first=False)
    with pytest.warns(UserWarning, match=r"enable_nested_tensor is True, but "
                                         r"self.use_nested_tensor is False because "
                                         r"encoder_layer.self_attn.batch_first was not True"):
        enc = nn.TransformerEncoder(layer, 2)
    assert enc.enable_nested_tensor and not enc.use_nested_tensor
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
def test_layers_options_and_errors():
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, activation="gelu",
                                       layer_norm_eps=1e-3, norm_first=True, bias=False)
    assert layer.activation is F.gelu and layer.norm_first and layer.norm1.eps == 1e-3
    assert layer.linear1.bias is None and layer.self_attn.in_proj_bias is None
    assert layer.activation_relu_or_gelu == 2
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerDecoderLayer(8, 2, activation="tanh")
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.TransformerEncoderLayer(10, 3)
    model = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                           dim_feedforward=16)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        model(ember.zeros(4, 2, 8), ember.zeros(3, 3, 8))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to "
                                           "d_model"):
        model(ember.zeros(4, 2, 8), ember.zeros(3, 2, 6))
    mask = nn.Transformer.generate_square_subsequent_mask(3)
    assert mask.tolist() == [[0.0, float("-inf"), float("-inf")], [0.0, 0.0, float("-inf")],
                             [0.0, 0.0, 0.0]]


def test_layers_are_independent_copies():
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 3,
                                enable_nested_tensor=False)
    w = [layer.linear1.weight for layer in enc.layers]
    assert w[0] is not w[1] and len(list(enc.parameters())) == 3 * 12
    assert len(enc.state_dict()) == 3 * 12


@pytest.mark.skipif(not ember.opencl.is_available(), reason="opencl unavailable")
def test_encoder_training_step_on_opencl_matches_the_cpu():
    ember.manual_seed(0)
    cpu = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0,
                                                           batch_first=True), 2,
                                enable_nested_tensor=False)
    dev = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0,
                                                           batch_first=True), 2,
                                enable_nested_tensor=False)
    dev.load_state_dict(cpu.state_dict())
    dev.to("opencl")
    x = randn(3, 10, 16)
    pad = np.zeros((3, 10), bool)
    pad[1, 7:] = True
    mask = ember.ones(10, 10, dtype=ember.bool).triu(1)  # nn masks: True = masked out
    outs = []
    for model, d in ((cpu, "cpu"), (dev, "opencl")):
        out = model(ember.tensor(x, device=d), mask=mask.to(d),
                    src_key_padding_mask=ember.tensor(pad, device=d))
        (out * out).mean().backward()
        outs.append((out, {n: p.grad for n, p in model.named_parameters()}))
    assert_close(outs[1][0].cpu(), outs[0][0].detach(), rtol=1e-4, atol=1e-5)
    for name, g in outs[0][1].items():
        assert_close(outs[1][1][name].cpu(), g, rtol=1e-3, atol=1e-5)


def test_the_transformer_layer_example_runs():
    spec = importlib.util.spec_from_file_location("transformer_layer_example",
                                                  ROOT / "examples" / "transformer_layer.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    losses = example.main(["--steps", "3", "--seq", "8", "--batch", "2"])
    assert len(losses) == 3 and all(np.isfinite(losses))
