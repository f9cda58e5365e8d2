"""Recurrent step kernels for array-module backends (``ember.ops.rnn``).

Each step is one hidden-to-hidden product (``xp.matmul``, BLAS on the CPU: it reads the
transposed weight as it is) and a few in-place ufunc passes over (B, G) arrays written straight
into the outputs, so a step allocates only its results. Half-precision steps compute in
float32 and round once, like the linear-algebra kernels.
"""
from __future__ import annotations

from .._fastpath import C as _C
from .binding import bind
from .linalg import HALF


def _work(be, *tensors):
    """(result dtype, arrays to compute with): None stays None; half precision -> float32."""
    arrays = [None if t is None else be.native(t) for t in tensors]
    dt = arrays[0].dtype
    if dt in HALF:
        f32 = be.xp.dtype(be.xp.float32)
        arrays = [None if a is None else a.astype(f32) for a in arrays]
    return dt, arrays


def _out(be, arr, dt, device):
    return be.wrap(arr if arr.dtype == dt else arr.astype(dt), device)


def _hidden(xp, h, w, b, gx=None):
    """gx + (h @ w^T + b) (PyTorch's association) as a fresh C-contiguous array. The product
    is computed as (w @ h^T)^T: BLAS is 2-3x faster on the tall (G, B) product than on the wide
    (B, G) one for the small batches of a time step; the first add lays it out row-major."""
    tall = xp.matmul(w, h.T)
    out = xp.empty(tall.shape[::-1], dtype=tall.dtype)
    if b is None:
        out[...] = tall.T
    else:
        xp.add(tall.T, b, out=out)
    if gx is not None:
        out += gx
    return out


def _sigmoid(xp, x, out):
    """out = sigmoid(x) as 0.5 * tanh(x / 2) + 0.5: numpy's tanh is vectorized, where
    scipy's expit is ~20x slower on float32, and it never overflows."""
    xp.multiply(x, 0.5, out=out)
    xp.tanh(out, out=out)
    out *= 0.5
    out += 0.5


def _complement_times(xp, dst, a):
    """dst *= 1 - a (the derivative factors of sigmoid, a = sigmoid(x): a * (1 - a))."""
    dst *= xp.subtract(1, a)


def _gate_scales(xp, hidden, dtype):
    """The (4H,) factors that turn one tanh over all gates into sigmoid(i, f, o) and tanh(g):
    sigmoid(x) = 0.5 * tanh(x / 2) + 0.5, so the gates are scaled by 0.5 (1 for g) before the
    tanh, and scaled and shifted by 0.5 (1 and 0 for g) after it."""
    scale = xp.full((4 * hidden,), 0.5, dtype=dtype)
    scale[2 * hidden:3 * hidden] = 1
    shift = scale.copy()
    shift[2 * hidden:3 * hidden] = 0
    return scale, shift


def _lstm_cell(xp, gates, c, ws, cy, hy, scales, scaled=False):
    """One step's gate math from the pre-activation gates (B, 4H), which are scratch: the
    activations and tanh(c') into ``ws`` (B, 5H), c' into ``cy``; returns h' = o * tanh(c')
    (into ``hy``). The four activations are one scaled tanh over the whole block; ``scaled``
    says the gates hold the scaled pre-activations already (lstm_layer scales its input gates
    and w_hh once: by powers of two, so the bits are the same). ember._C does the arithmetic
    between the two tanh passes in one."""
    H = c.shape[1]
    scale, shift = scales
    if not scaled:
        gates *= scale   # in place on the contiguous scratch: passes into ws's strided
    xp.tanh(gates, out=gates)   # columns cost ~1.5x, so only the last one writes there
    i, f, g, o, tc = (ws[:, k * H:(k + 1) * H] for k in range(5))
    if not (_C is not None and _C.lstm_cell_gates(gates, c, ws, cy)):
        gates *= scale
        xp.add(gates, shift, out=ws[:, :4 * H])
        xp.multiply(f, c, out=cy)
        xp.multiply(i, g, out=tc)
        cy += tc
    xp.tanh(cy, out=tc)
    return xp.multiply(o, tc, out=hy)


def lstm_step(be, gates_x, hx, cx, w_hh, b_hh, w_hr):
    xp = be.xp
    dt, (gx, h, c, w, b, wr) = _work(be, gates_x, hx, cx, w_hh, b_hh, w_hr)
    gates = _hidden(xp, h, w, b, gx)
    ws = xp.empty((c.shape[0], 5 * c.shape[1]), dtype=gates.dtype)
    cy = xp.empty(c.shape, dtype=gates.dtype)
    hy = _lstm_cell(xp, gates, c, ws, cy, None, _gate_scales(xp, c.shape[1], gates.dtype))
    if wr is not None:
        hy = xp.matmul(hy, wr.T)
    dev = gates_x.device
    return _out(be, hy, dt, dev), _out(be, cy, dt, dev), _out(be, ws, dt, dev)


def _cell_backward(xp, gh, gcy, c, ws, d):
    """The gates' gradients into ``d`` (B, 4H); returns the cell gradient of the step before."""
    gc = xp.empty(c.shape, dtype=ws.dtype)
    if not (_C is not None and _C.lstm_cell_backward(gh, gcy, c, ws, d, gc)):
        _lstm_cell_backward(xp, gh, gcy, c, ws, d, gc)
    return gc


def lstm_step_backward(be, grad_hy, grad_cy, cx, workspace, w_hh, w_hr):
    xp = be.xp
    dt, (ghy, gcy, c, ws, w, wr) = _work(be, grad_hy, grad_cy, cx, workspace, w_hh, w_hr)
    gh = ghy if wr is None else xp.matmul(ghy, wr)
    d = xp.empty((c.shape[0], 4 * c.shape[1]), dtype=ws.dtype)
    gc = _cell_backward(xp, gh, gcy, c, ws, d)
    dev = cx.device
    return _out(be, d, dt, dev), _out(be, xp.matmul(d, w), dt, dev), _out(be, gc, dt, dev)


def _step_rows(op, rows, steps, batch, reverse):
    """Each step's rows of a layer's (steps * batch, *) arrays, in the order the steps run.
    (The kernels of trusted backends run without the meta check: a row count that is not
    whole steps would otherwise leave rows unwritten.)"""
    if steps < 1 or rows != steps * batch:
        raise RuntimeError(f"{op}: {rows} rows are not {steps} steps of batch {batch}")
    order = range(steps - 1, -1, -1) if reverse else range(steps)
    return [slice(t * batch, (t + 1) * batch) for t in order]


#: products up to this many multiply-adds take the in-place gemm (measured, one thread: a
#: (64, 64) x (64, 256) step 26 us against 42 for product then adds; from (20, 200) x (200, 800)
#: on, scipy's OpenBLAS build is the slower of the two and numpy's product plus one add wins)
_GEMM_INTO_MAX = 1 << 21


def _add_recurrent(xp, gates, h, w):
    """gates += h @ w.T in place (gates' rows of one step, h: (B, H'), w: (4H, H')). Small
    products are one BLAS gemm with beta = 1 writing into ``gates`` (scipy's wrapper; numpy's
    matmul can only overwrite); the row-major arrays go to the column-major BLAS as their
    transposes. Larger ones, or another array module, add the tall product (w @ h.T)^T: BLAS
    runs the (4H, B) shape 2-3x faster than (B, 4H) for the small batches of a time step."""
    gemm = _gemm(xp, gates.dtype)
    if gemm is not None and h.shape[0] * w.shape[0] * w.shape[1] <= _GEMM_INTO_MAX and \
            gates.flags.c_contiguous and h.flags.c_contiguous and w.flags.c_contiguous:
        c = gates.T
        done = gemm(1.0, w.T, h.T, beta=1.0, c=c, trans_a=1, overwrite_c=1)
        if done is not c:   # the wrapper worked on a copy after all
            c[...] = done
    else:
        gates += xp.matmul(w, h.T).T


def _gemm(xp, dtype):
    """scipy's s/dgemm for a numpy array of that dtype, else None (cupy, half, complex)."""
    if getattr(xp, "__name__", None) != "numpy" or dtype.char not in "fd":
        return None
    # start-up: scipy.linalg is loaded with the CPU backend already
    from scipy.linalg import blas
    return blas.sgemm if dtype.char == "f" else blas.dgemm


def lstm_layer(be, gates_x, hx, cx, w_hh, b_hh, w_hr, steps, reverse):
    """``steps`` lstm_steps in one call, each writing into the layer's arrays in place: the
    input gates plus b_hh are laid out once, and each step adds its recurrent product to
    its rows of them."""
    xp = be.xp
    dt, (gx, h, c, w, b, wr) = _work(be, gates_x, hx, cx, w_hh, b_hh, w_hr)
    rows, H = gx.shape[0], c.shape[1]
    out = xp.empty((rows, h.shape[1]), dtype=gx.dtype)
    cells = xp.empty((rows, H), dtype=gx.dtype)
    ws = xp.empty((rows, 5 * H), dtype=gx.dtype)
    gates = xp.empty(gx.shape, dtype=gx.dtype)     # C order, whatever gx's layout
    if b is None:
        gates[...] = gx
    else:
        xp.add(gx, b, out=gates)
    scales = _gate_scales(xp, H, gx.dtype)
    gates *= scales[0]                       # the cell's pre-tanh scaling, once for all steps
    w = w * scales[0][:, None]               # (and exact: scaling by 1/2 commutes with rounding)
    h = xp.ascontiguousarray(h)
    c = xp.ascontiguousarray(c)
    for r in _step_rows("lstm_layer", rows, steps, h.shape[0], reverse):
        _add_recurrent(xp, gates[r], h, w)
        if wr is None:
            _lstm_cell(xp, gates[r], c, ws[r], cells[r], out[r], scales, scaled=True)
        else:
            xp.matmul(_lstm_cell(xp, gates[r], c, ws[r], cells[r], None, scales, scaled=True),
                      wr.T, out=out[r])
        h, c = out[r], cells[r]
    dev = gates_x.device
    return (_out(be, out, dt, dev), _out(be, h.copy(), dt, dev), _out(be, c.copy(), dt, dev),
            _out(be, cells, dt, dev), _out(be, ws, dt, dev))


def lstm_layer_backward(be, grad_output, grad_hy, grad_cy, cx, cells, workspace, w_hh, w_hr,
                        steps, reverse):
    """The steps walked back: each one fused cell backward, whose gate gradients' product
    with w_hh is added into the hidden gradient of the step before (numpy's product plus an
    add beat scipy's in-place gemm here at every size measured)."""
    xp = be.xp
    dt, (gout, g_h, g_c, c0, cs, ws, w, wr) = _work(be, grad_output, grad_hy, grad_cy, cx,
                                                     cells, workspace, w_hh, w_hr)
    g_c = xp.ascontiguousarray(g_c)
    d = xp.empty((ws.shape[0], 4 * c0.shape[1]), dtype=ws.dtype)
    gh = xp.array(gout, dtype=ws.dtype, order="C")     # += each later step's product
    order = _step_rows("lstm_layer_backward", ws.shape[0], steps, c0.shape[0], reverse)
    gh[order[-1]] += g_h
    for k in range(steps - 1, -1, -1):
        r = order[k]
        g_cell = gh[r] if wr is None else xp.matmul(gh[r], wr)
        g_c = _cell_backward(xp, g_cell, g_c, c0 if k == 0 else cs[order[k - 1]], ws[r], d[r])
        if k > 0:
            gh[order[k - 1]] += xp.matmul(d[r], w)
    g_h = xp.matmul(d[order[0]], w)
    dev = cx.device
    return (_out(be, d, dt, dev), _out(be, g_h, dt, dev), _out(be, g_c, dt, dev),
            _out(be, gh, dt, dev))


def _lstm_cell_backward(xp, gh, gcy, c, ws, d, gc):
    """The gates' gradients into ``d`` (B, 4H) and the cell's into ``gc`` (B, H) from the
    hidden and cell gradients (the reference of csrc/rnn_cells.c, which does it in one pass
    for C-contiguous float32/float64 host arrays)."""
    H = c.shape[1]
    i, f, g, o, tc = (ws[:, k * H:(k + 1) * H] for k in range(5))
    di, df, dg, do = (d[:, k * H:(k + 1) * H] for k in range(4))
    # gc = grad_cy + gh * o * (1 - tanh(c')^2)
    xp.multiply(tc, tc, out=gc)
    xp.subtract(1, gc, out=gc)
    gc *= o
    gc *= gh
    gc += gcy
    xp.multiply(gc, g, out=di)
    di *= i
    _complement_times(xp, di, i)
    xp.multiply(gc, c, out=df)
    df *= f
    _complement_times(xp, df, f)
    xp.multiply(g, g, out=dg)
    xp.subtract(1, dg, out=dg)
    dg *= i
    dg *= gc
    xp.multiply(gh, tc, out=do)
    do *= o
    _complement_times(xp, do, o)
    gc *= f


def gru_step(be, gates_x, hx, w_hh, b_hh):
    xp = be.xp
    dt, (gx, h, w, b) = _work(be, gates_x, hx, w_hh, b_hh)
    H = h.shape[1]
    gh = _hidden(xp, h, w, b)
    ws = xp.empty((h.shape[0], 4 * H), dtype=gh.dtype)
    rz = ws[:, :2 * H]
    xp.add(gx[:, :2 * H], gh[:, :2 * H], out=rz)
    _sigmoid(xp, rz, rz)
    r, z, n, hn = (ws[:, k * H:(k + 1) * H] for k in range(4))
    hn[...] = gh[:, 2 * H:]
    xp.multiply(r, hn, out=n)
    n += gx[:, 2 * H:]
    xp.tanh(n, out=n)
    hy = xp.subtract(h, n)   # h' = n + z * (h - n)
    hy *= z
    hy += n
    dev = gates_x.device
    return _out(be, hy, dt, dev), _out(be, ws, dt, dev)


def gru_step_backward(be, grad_hy, hx, workspace, w_hh):
    xp = be.xp
    dt, (g, h, ws, w) = _work(be, grad_hy, hx, workspace, w_hh)
    H = h.shape[1]
    r, z, n, hn = (ws[:, k * H:(k + 1) * H] for k in range(4))
    d_x = xp.empty((h.shape[0], 3 * H), dtype=ws.dtype)
    dr, dz, dn = (d_x[:, k * H:(k + 1) * H] for k in range(3))
    xp.multiply(n, n, out=dn)          # dn = g * (1 - z) * (1 - n^2)
    xp.subtract(1, dn, out=dn)
    dn *= g
    _complement_times(xp, dn, z)
    xp.multiply(dn, hn, out=dr)        # dr = dn * h_n * r * (1 - r)
    dr *= r
    _complement_times(xp, dr, r)
    xp.subtract(h, n, out=dz)          # dz = g * (h - n) * z * (1 - z)
    dz *= g
    dz *= z
    _complement_times(xp, dz, z)
    d_h = d_x.copy()
    d_h[:, 2 * H:] *= r
    g_hx = xp.matmul(d_h, w)
    g_hx += g * z
    dev = hx.device
    return _out(be, d_x, dt, dev), _out(be, d_h, dt, dev), _out(be, g_hx, dt, dev)


def rnn_step(be, gates_x, hx, w_hh, b_hh, nonlinearity):
    xp = be.xp
    dt, (gx, h, w, b) = _work(be, gates_x, hx, w_hh, b_hh)
    pre = _hidden(xp, h, w, b, gx)
    if nonlinearity == "tanh":
        xp.tanh(pre, out=pre)
    else:
        xp.maximum(pre, 0, out=pre)
    return _out(be, pre, dt, gates_x.device)


def rnn_step_backward(be, grad_hy, hy, w_hh, nonlinearity):
    xp = be.xp
    dt, (g, y, w) = _work(be, grad_hy, hy, w_hh)
    if nonlinearity == "tanh":
        d = xp.multiply(y, y)
        xp.subtract(1, d, out=d)
        d *= g
    else:
        d = xp.where(y > 0, g, xp.zeros((), dtype=g.dtype))
    dev = hy.device
    return _out(be, d, dt, dev), _out(be, xp.matmul(d, w), dt, dev)


TABLE = {"lstm_step": lstm_step, "lstm_step_backward": lstm_step_backward,
         "lstm_layer": lstm_layer, "lstm_layer_backward": lstm_layer_backward,
         "gru_step": gru_step, "gru_step_backward": gru_step_backward,
         "rnn_step": rnn_step, "rnn_step_backward": rnn_step_backward}


def register(backend) -> None:
    bind(backend, TABLE)
