"""Gradients at non-differentiable points equal torch's (issue #30, item 5).

Where a function has a kink, a tie or a boundary (relu at 0, max over equal values, ``0 ** 0``,
a norm at the zero vector, BCE at probability 0 or 1, a distribution at a boundary parameter),
its gradient is a convention: a subgradient, or how a tie is split. PyTorch's convention is set
by each op's derivative (``derivatives.yaml``) and by which fused ops its Python composites
(losses, distributions) call. Each case here runs the same program under torch and ember in
float64 with the same inputs, differentiates every floating output with a fixed cotangent and
requires equal first derivatives — and, where torch has them, second derivatives (the first
derivatives differentiated again with another fixed cotangent) — NaN where torch has NaN,
infinities alike.

Run as a script (``python tests/test_kinks.py``) it prints how many cases differ.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

import ember

INF = math.inf
ATOL = 1e-12


@dataclass
class Const:
    """A non-differentiable tensor argument (targets, masks, class indices)."""
    values: object
    dtype: str = "float64"


@dataclass
class Case:
    name: str
    fn: Callable            # fn(lib, *tensors): lib is torch or ember
    args: tuple             # float lists: differentiable float64 leaves; Const: as given
    second: bool = True     # compare second derivatives too (False: why, in a comment)
    rtol: float = 1e-9


def F(lib):
    return lib.nn.functional


def D(lib):
    return lib.distributions


TIES = [[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]]
STEPS = [-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0]
ROUNDING = [-1.5, -0.5, 0.0, 0.5, 1.5, 2.0]

CASES = [
    # -- clamps and piecewise-linear activations at their corners --------------------------
    Case("relu", lambda L, x: L.relu(x), (STEPS,)),
    Case("relu6", lambda L, x: F(L).relu6(x), ([-1.0, 0.0, 3.0, 6.0, 7.0],)),
    Case("clamp", lambda L, x: L.clamp(x, -1, 1), (STEPS,)),
    Case("clamp min only", lambda L, x: L.clamp(x, min=0), (STEPS,)),
    Case("clamp max only", lambda L, x: L.clamp(x, max=0), (STEPS,)),
    Case("clamp min > max", lambda L, x: L.clamp(x, 1, -1), (STEPS,)),
    Case("clamp_min", lambda L, x: L.clamp_min(x, 0.5), (STEPS,)),
    Case("clamp_max", lambda L, x: L.clamp_max(x, 0.5), (STEPS,)),
    Case("clamp tensor bounds", lambda L, x, lo, hi: L.clamp(x, lo, hi),
         ([-1.0, 0.0, 1.0, 2.0], [-1.0, 0.0, 0.0, 0.0], [1.0, 0.0, 1.0, 1.0])),
    Case("clamp tensor min > max", lambda L, x, lo, hi: L.clamp(x, lo, hi),
         ([-1.0, 0.0, 1.0], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0])),
    Case("clamp_min tensor", lambda L, x, lo: L.clamp_min(x, lo), ([-1.0, 0.0, 1.0],
                                                                   [0.0, 0.0, 0.0])),
    Case("clamp_max tensor", lambda L, x, hi: L.clamp_max(x, hi), ([-1.0, 0.0, 1.0],
                                                                   [0.0, 0.0, 0.0])),
    Case("hardtanh", lambda L, x: F(L).hardtanh(x), (STEPS,)),
    Case("hardtanh bounds", lambda L, x: F(L).hardtanh(x, -0.5, 0.5), (STEPS,)),
    Case("leaky_relu", lambda L, x: F(L).leaky_relu(x, 0.1), (STEPS,)),
    Case("elu", lambda L, x: F(L).elu(x), (STEPS,)),
    Case("elu alpha 2", lambda L, x: F(L).elu(x, 2.0), (STEPS,)),
    Case("celu", lambda L, x: F(L).celu(x, 0.5), (STEPS,)),
    Case("selu", lambda L, x: F(L).selu(x), (STEPS,)),
    Case("softplus threshold", lambda L, x: F(L).softplus(x),
         ([19.5, 20.0, 20.5, 0.0],)),
    Case("softplus beta 2 threshold 1", lambda L, x: F(L).softplus(x, 2.0, 1.0),
         ([0.25, 0.5, 0.75, -0.5],)),
    Case("threshold", lambda L, x: F(L).threshold(x, 0.5, 2.0), (STEPS,)),
    Case("hardshrink", lambda L, x: F(L).hardshrink(x, 0.5), (STEPS,)),
    Case("softshrink", lambda L, x: F(L).softshrink(x, 0.5), (STEPS,)),
    # torch's hardsigmoid_backward multiplies by 1/6 rounded to float32 even in float64
    Case("hardsigmoid", lambda L, x: F(L).hardsigmoid(x), ([-4.0, -3.0, 0.0, 3.0, 4.0],),
         rtol=1e-7),
    Case("hardswish", lambda L, x: F(L).hardswish(x), ([-4.0, -3.0, 0.0, 3.0, 4.0],)),
    Case("softsign", lambda L, x: F(L).softsign(x), (STEPS,)),
    Case("prelu", lambda L, x, w: F(L).prelu(x, w), (STEPS, [0.25])),
    Case("rrelu eval", lambda L, x: F(L).rrelu(x, training=False), (STEPS,)),
    Case("abs", lambda L, x: L.abs(x), (STEPS,)),
    Case("logsigmoid", lambda L, x: F(L).logsigmoid(x), ([-30.0, 0.0, 30.0],)),
    # in place: the backward reads the result (relu_, leaky_relu_, elu_) or a saved input copy
    Case("relu_", lambda L, x: F(L).relu(x * 1, inplace=True), (STEPS,)),
    Case("leaky_relu_", lambda L, x: F(L).leaky_relu(x * 1, 0.1, inplace=True), (STEPS,)),
    Case("elu_", lambda L, x: F(L).elu(x * 1, 2.0, inplace=True), (STEPS,)),
    Case("hardtanh_", lambda L, x: F(L).hardtanh(x * 1, inplace=True), (STEPS,)),
    Case("clamp_", lambda L, x: (x * 1).clamp_(-1, 1), (STEPS,)),
    # NaN inputs: which masks let a NaN through
    Case("relu nan", lambda L, x: L.relu(x), ([math.nan, 1.0],)),
    Case("clamp nan", lambda L, x: L.clamp(x, -1, 1), ([math.nan, 0.5],)),
    Case("hardtanh nan", lambda L, x: F(L).hardtanh(x), ([math.nan, 0.5],)),
    Case("leaky_relu nan", lambda L, x: F(L).leaky_relu(x, 0.1), ([math.nan, -1.0],)),
    Case("abs nan", lambda L, x: L.abs(x), ([math.nan, -1.0],)),
    Case("relu6 nan", lambda L, x: F(L).relu6(x), ([math.nan, 1.0],)),
    Case("elu nan", lambda L, x: F(L).elu(x), ([math.nan, -1.0],)),
    Case("celu nan", lambda L, x: F(L).celu(x, 0.5), ([math.nan, -1.0],)),
    Case("softplus nan", lambda L, x: F(L).softplus(x), ([math.nan, -1.0],)),
    Case("threshold nan", lambda L, x: F(L).threshold(x, 0.5, 2.0), ([math.nan, 1.0],)),
    Case("hardshrink nan", lambda L, x: F(L).hardshrink(x, 0.5), ([math.nan, 1.0],)),
    Case("softshrink nan", lambda L, x: F(L).softshrink(x, 0.5), ([math.nan, 1.0],)),
    Case("hardsigmoid nan", lambda L, x: F(L).hardsigmoid(x), ([math.nan, 1.0],), rtol=1e-7),
    Case("hardswish nan", lambda L, x: F(L).hardswish(x), ([math.nan, 1.0],)),
    Case("prelu nan", lambda L, x, w: F(L).prelu(x, w), ([math.nan, -1.0], [0.25])),
    # complex values at 0: |z|, sgn, angle
    Case("complex abs at 0", lambda L, z: L.abs(z), ([0j, 3 + 4j],)),
    Case("complex sgn at 0", lambda L, z: L.sgn(z), ([0j, 3 + 4j],)),
    Case("complex angle at 0", lambda L, z: L.angle(z), ([0j, 1j, -1 + 0j],)),
    Case("complex sqrt at 0", lambda L, z: L.sqrt(z), ([0j, 4 + 0j],)),
    Case("complex pow at 0", lambda L, z: z ** 2, ([0j, 1 + 1j],)),
    # -- piecewise-constant ------------------------------------------------------------------
    Case("sign", lambda L, x: L.sign(x), (ROUNDING,)),
    Case("sgn", lambda L, x: L.sgn(x), (ROUNDING,)),
    Case("round", lambda L, x: L.round(x), (ROUNDING,)),
    Case("floor", lambda L, x: L.floor(x), (ROUNDING,)),
    Case("ceil", lambda L, x: L.ceil(x), (ROUNDING,)),
    Case("trunc", lambda L, x: L.trunc(x), (ROUNDING,)),
    Case("frac", lambda L, x: L.frac(x), (ROUNDING,)),
    Case("fmod", lambda L, x, y: L.fmod(x, y), ([2.0, -2.0, 3.0], [2.0, 2.0, 1.5])),
    Case("remainder", lambda L, x, y: L.remainder(x, y), ([2.0, -2.0, 3.0], [2.0, 2.0, 1.5])),
    # -- roots and powers at 0 -----------------------------------------------------------------
    Case("sqrt", lambda L, x: L.sqrt(x), ([0.0, 1.0, 4.0],)),
    Case("rsqrt", lambda L, x: L.rsqrt(x), ([0.0, 1.0, 4.0],)),
    Case("x ** 0", lambda L, x: x ** 0, ([0.0, 1.0, -1.0],)),
    Case("x ** 0.0", lambda L, x: L.pow(x, 0.0), ([0.0, 1.0, -1.0],)),
    Case("x ** 1", lambda L, x: x ** 1, ([0.0, 1.0, -1.0],)),
    Case("x ** 2", lambda L, x: x ** 2, ([0.0, 1.0, -1.0],)),
    Case("x ** 0.5", lambda L, x: x ** 0.5, ([0.0, 1.0, 4.0],)),
    Case("x ** 1.5", lambda L, x: x ** 1.5, ([0.0, 1.0, 4.0],)),
    Case("x ** -1", lambda L, x: x ** -1, ([0.0, 1.0, -1.0],)),
    Case("x ** y", lambda L, x, y: L.pow(x, y),
         ([0.0, 0.0, 0.0, 1.0, 2.0, -1.0], [0.0, 1.0, 2.0, 0.0, 0.5, 2.0])),
    Case("0 ** y", lambda L, y: L.pow(0.0, y), ([0.0, 1.0, 2.0, -1.0],)),
    Case("2 ** y", lambda L, y: L.pow(2.0, y), ([0.0, 1.0, -1.0],)),
    Case("float_power", lambda L, x, y: L.float_power(x, y), ([0.0, 0.0, 2.0], [0.0, 2.0, 0.0])),
    Case("atan2", lambda L, y, x: L.atan2(y, x), ([0.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, -1.0])),
    Case("hypot", lambda L, x, y: L.hypot(x, y), ([0.0, 3.0], [0.0, 4.0])),
    Case("xlogy", lambda L, x, y: L.xlogy(x, y), ([0.0, 0.0, 1.0, 2.0], [0.0, 1.0, 0.0, 3.0])),
    Case("xlog1py", lambda L, x, y: L.special.xlog1py(x, y),
         ([0.0, 0.0, 1.0], [-1.0, 1.0, -1.0])),
    Case("entr", lambda L, x: L.special.entr(x), ([0.0, 0.5, 1.0],)),
    # second derivatives: torch's sinc_backward masks x == 0 with a where over a 0/0, whose
    # own derivative is NaN there; ember's is sinc''(0) = -pi^2/3
    Case("sinc", lambda L, x: L.sinc(x), ([0.0, 0.5, 1.0],), second=False),
    # second derivatives: torch's gives NaN at 0 and 1 (outside [eps, 1 - eps], where logit
    # is constant); ember's is 0 there
    Case("logit eps", lambda L, x: L.logit(x, eps=0.1), ([0.0, 0.05, 0.1, 0.5, 0.9, 1.0],),
         second=False),
    Case("logit", lambda L, x: L.logit(x), ([0.0, 0.5, 1.0],)),
    Case("log at 0", lambda L, x: L.log(x), ([0.0, 1.0],)),
    Case("log1p at -1", lambda L, x: L.log1p(x), ([-1.0, 0.0],)),
    # -- ties: max / min / sort --------------------------------------------------------------
    Case("max", lambda L, x: L.max(x), (TIES,)),
    Case("min", lambda L, x: L.min(x), (TIES,)),
    Case("max dim", lambda L, x: L.max(x, 1)[0], (TIES,)),
    Case("min dim", lambda L, x: L.min(x, 0)[0], (TIES,)),
    Case("max dim keepdim", lambda L, x: L.max(x, 1, keepdim=True)[0], (TIES,)),
    Case("amax", lambda L, x: L.amax(x), (TIES,)),
    Case("amax dim", lambda L, x: L.amax(x, 1), (TIES,)),
    Case("amin dim", lambda L, x: L.amin(x, 0), (TIES,)),
    Case("aminmax", lambda L, x: L.aminmax(x, dim=1), (TIES,)),
    Case("maximum", lambda L, x, y: L.maximum(x, y), ([1.0, 2.0, 3.0], [1.0, 0.0, 3.0])),
    Case("minimum", lambda L, x, y: L.minimum(x, y), ([1.0, 2.0, 3.0], [1.0, 0.0, 3.0])),
    Case("fmax", lambda L, x, y: L.fmax(x, y), ([1.0, 2.0, 3.0], [1.0, 0.0, 3.0])),
    Case("fmin", lambda L, x, y: L.fmin(x, y), ([1.0, 2.0, 3.0], [1.0, 0.0, 3.0])),
    Case("max binary", lambda L, x, y: L.max(x, y), ([1.0, 2.0], [1.0, 0.0])),
    Case("sort", lambda L, x: L.sort(x, 1)[0], (TIES,)),
    Case("sort descending", lambda L, x: L.sort(x, 1, descending=True)[0], (TIES,)),
    Case("sort stable", lambda L, x: L.sort(x, dim=1, stable=True)[0], (TIES,)),
    Case("topk", lambda L, x: L.topk(x, 2, 1)[0], (TIES,)),
    Case("topk smallest", lambda L, x: L.topk(x, 2, 1, largest=False)[0], (TIES,)),
    Case("kthvalue", lambda L, x: L.kthvalue(x, 2, 1)[0], (TIES,)),
    Case("median", lambda L, x: L.median(x), ([[1.0, 2.0, 2.0], [2.0, 0.0, 2.0]],)),
    Case("median dim", lambda L, x: L.median(x, 1)[0], (TIES,)),
    Case("median even", lambda L, x: L.median(x), ([2.0, 1.0, 2.0, 3.0],)),
    Case("nanmedian", lambda L, x: L.nanmedian(x), ([2.0, 1.0, 2.0, 3.0],)),
    Case("mode", lambda L, x: L.mode(x, 1)[0], (TIES,)),
    Case("cummax", lambda L, x: L.cummax(x, 1)[0], (TIES,)),
    Case("cummin", lambda L, x: L.cummin(x, 1)[0], (TIES,)),
    Case("msort", lambda L, x: L.msort(x), (TIES,)),
    Case("max_pool2d ties", lambda L, x: F(L).max_pool2d(x, 2, 1),
         ([[[[1.0, 1.0, 0.0], [1.0, 1.0, 2.0], [2.0, 2.0, 2.0]]]],)),
    Case("max_pool1d ties", lambda L, x: F(L).max_pool1d(x, 2, 1), ([[[1.0, 1.0, 1.0, 0.0]]],)),
    Case("adaptive_max_pool2d ties", lambda L, x: F(L).adaptive_max_pool2d(x, 2),
         ([[[[1.0, 1.0, 0.0], [1.0, 1.0, 2.0], [2.0, 2.0, 2.0]]]],)),
    Case("amax with nan", lambda L, x: L.amax(x, 1), ([[1.0, math.nan, 1.0], [2.0, 2.0, 0.0]],)),
    Case("max with nan", lambda L, x: L.max(x), ([1.0, math.nan, 3.0, math.nan],)),
    Case("max dim with nan", lambda L, x: L.max(x, 1)[0], ([[1.0, math.nan, 1.0]],)),
    Case("maximum with nan", lambda L, x, y: L.maximum(x, y), ([math.nan, 1.0, 2.0],
                                                             [1.0, math.nan, 2.0])),
    Case("median with nan", lambda L, x: L.median(x), ([1.0, math.nan, 3.0, math.nan],)),
    Case("scatter_reduce amax ties", lambda L, x, src: x.scatter_reduce(
        0, L.tensor([0, 0, 1, 1]), src, "amax"), ([1.0, 3.0], [1.0, 0.5, 3.0, 3.0])),
    # include_self=False with the excluded input equal to the result: torch still counts it
    # among the ties (halving the gradient of a unique extremum); ember does not, so the
    # input here differs from the result
    Case("scatter_reduce amin exclude self", lambda L, x, src: x.scatter_reduce(
        0, L.tensor([0, 0, 1, 1]), src, "amin", include_self=False),
        ([1.0, 5.0], [2.0, 2.0, 3.0, 4.0])),
    Case("index_reduce amax ties", lambda L, x, src: x.index_reduce(
        0, L.tensor([0, 1, 1]), src, "amax"), ([[2.0, 1.0], [3.0, 0.0]],
                                               [[2.0, 0.0], [3.0, 0.0], [1.0, 0.0]])),
    Case("embedding_bag max ties", lambda L, w: F(L).embedding_bag(
        L.tensor([[0, 1, 2]]), w, mode="max"), ([[1.0, 2.0], [1.0, 0.0], [0.5, 2.0]],)),
    Case("nan_to_num", lambda L, x: L.nan_to_num(x), ([math.nan, INF, -INF, 1.0],)),
    Case("grid_sample on the pixel grid", lambda L, x, g: F(L).grid_sample(
        x, g, align_corners=True), ([[[[1.0, 2.0], [3.0, 5.0]]]],
                                    [[[[-1.0, -1.0], [0.0, 0.0]], [[1.0, 1.0], [1.0, -1.0]]]])),
    Case("lp_pool2d of zeros", lambda L, x: F(L).lp_pool2d(x, 2.0, 2),
         ([[[[0.0, 0.0], [0.0, 0.0]]], [[[1.0, 0.0], [0.0, 0.0]]]],)),
    # -- where ---------------------------------------------------------------------------------
    Case("where", lambda L, c, x, y: L.where(c, x, y),
         (Const([True, False, True], "bool"), [1.0, 2.0, 3.0], [4.0, 5.0, 6.0])),
    Case("where masks a nan branch", lambda L, x: L.where(x > 0, x.sqrt(), x * 0),
         ([0.0, 1.0, -1.0],)),
    Case("where scalar", lambda L, x: L.where(x > 0, x, 0.0), (STEPS,)),
    # -- norms at 0 ----------------------------------------------------------------------------
    Case("norm zero", lambda L, x: x.norm(), ([0.0, 0.0, 0.0],)),
    Case("norm p=1", lambda L, x: x.norm(p=1), ([0.0, 1.0, -1.0],)),
    Case("norm p=inf ties", lambda L, x: x.norm(p=INF), ([1.0, -1.0, 0.5],)),
    Case("norm p=inf zero", lambda L, x: x.norm(p=INF), ([0.0, 0.0],)),
    Case("norm p=-inf", lambda L, x: x.norm(p=-INF), ([1.0, -1.0, 2.0],)),
    Case("norm p=3 zero", lambda L, x: x.norm(p=3), ([0.0, 0.0],)),
    Case("norm p=0.5 with zero", lambda L, x: x.norm(p=0.5), ([0.0, 1.0],)),
    Case("norm dim zero row", lambda L, x: x.norm(dim=1), ([[0.0, 0.0], [3.0, 4.0]],)),
    Case("vector_norm 2 zero", lambda L, x: L.linalg.vector_norm(x), ([0.0, 0.0],)),
    Case("vector_norm 1", lambda L, x: L.linalg.vector_norm(x, 1), ([0.0, 1.0, -2.0],)),
    Case("vector_norm inf ties", lambda L, x: L.linalg.vector_norm(x, INF), ([2.0, -2.0, 1.0],)),
    Case("vector_norm -inf ties", lambda L, x: L.linalg.vector_norm(x, -INF),
         ([1.0, -1.0, 2.0],)),
    Case("vector_norm 0", lambda L, x: L.linalg.vector_norm(x, 0), ([0.0, 1.0],)),
    Case("linalg.norm zero", lambda L, x: L.linalg.norm(x), ([[0.0, 0.0], [0.0, 0.0]],)),
    Case("matrix_norm fro zero", lambda L, x: L.linalg.matrix_norm(x),
         ([[0.0, 0.0], [0.0, 0.0]],)),
    Case("matrix_norm 1 ties", lambda L, x: L.linalg.matrix_norm(x, 1),
         ([[1.0, 2.0], [1.0, 0.0]],)),
    Case("matrix_norm inf ties", lambda L, x: L.linalg.matrix_norm(x, INF),
         ([[1.0, 1.0], [2.0, 0.0]],)),
    Case("dist zero", lambda L, x, y: L.dist(x, y), ([1.0, 2.0], [1.0, 2.0])),
    Case("dist p=1", lambda L, x, y: L.dist(x, y, 1), ([1.0, 2.0], [1.0, 3.0])),
    Case("dist p=inf ties", lambda L, x, y: L.dist(x, y, INF), ([1.0, -2.0, 0.0],
                                                                 [0.0, -1.0, 0.5])),
    Case("cdist zero", lambda L, x, y: L.cdist(x, y),
         ([[0.0, 1.0], [2.0, 2.0]], [[0.0, 1.0], [1.0, 1.0]])),
    Case("cdist p=1", lambda L, x, y: L.cdist(x, y, p=1),
         ([[0.0, 1.0], [2.0, 2.0]], [[0.0, 1.0], [1.0, 1.0]])),
    Case("pdist", lambda L, x: F(L).pdist(x), ([[0.0, 1.0], [0.0, 1.0], [1.0, 1.0]],)),
    Case("pairwise_distance", lambda L, x, y: F(L).pairwise_distance(x, y),
         ([[1.0, 2.0]], [[1.0, 2.0]])),
    Case("cosine_similarity zero", lambda L, x, y: F(L).cosine_similarity(x, y, dim=0),
         ([0.0, 0.0], [1.0, 2.0])),
    Case("normalize zero", lambda L, x: F(L).normalize(x, dim=0), ([0.0, 0.0],)),
    Case("std of constant", lambda L, x: L.std(x), ([1.0, 1.0, 1.0],)),
    Case("var of constant", lambda L, x: L.var(x), ([1.0, 1.0, 1.0],)),
    Case("std_mean of constant", lambda L, x: L.std_mean(x), ([1.0, 1.0, 1.0],)),
    Case("renorm", lambda L, x: L.renorm(x, 2, 0, 1.0), ([[0.0, 0.0], [3.0, 4.0]],)),
    # -- products with zeros -----------------------------------------------------------------
    Case("prod one zero", lambda L, x: L.prod(x), ([0.0, 2.0, 3.0],)),
    Case("prod two zeros", lambda L, x: L.prod(x), ([0.0, 0.0, 3.0],)),
    Case("prod dim", lambda L, x: L.prod(x, 1), ([[0.0, 2.0], [0.0, 0.0]],)),
    Case("cumprod zeros", lambda L, x: L.cumprod(x, 0), ([2.0, 0.0, 3.0, 0.0, 4.0],)),
    # -- log-sum-exp with -inf -----------------------------------------------------------------
    Case("logsumexp -inf", lambda L, x: L.logsumexp(x, 1), ([[-INF, -INF], [0.0, -INF]],)),
    Case("logsumexp inf", lambda L, x: L.logsumexp(x, 0), ([INF, 0.0],)),
    Case("logcumsumexp -inf", lambda L, x: L.logcumsumexp(x, 0), ([-INF, 0.0, -INF],)),
    Case("logaddexp -inf", lambda L, x, y: L.logaddexp(x, y), ([-INF, 0.0, -INF], [-INF, -INF, 1.0])),
    Case("softmax -inf", lambda L, x: L.softmax(x, 0), ([-INF, 0.0, 1.0],)),
    Case("log_softmax -inf", lambda L, x: L.log_softmax(x, 0), ([-INF, 0.0, 1.0],)),
    # -- losses at their thresholds --------------------------------------------------------------
    Case("l1_loss", lambda L, x, t: F(L).l1_loss(x, t), ([0.0, 1.0], [0.0, 0.0])),
    Case("smooth_l1 at beta", lambda L, x, t: F(L).smooth_l1_loss(x, t, reduction="sum"),
         ([-1.0, 0.0, 1.0, 2.0], [0.0, 0.0, 0.0, 0.0])),
    Case("smooth_l1 beta 0", lambda L, x, t: F(L).smooth_l1_loss(x, t, beta=0.0),
         ([0.0, 1.0], [0.0, 0.0])),
    Case("huber at delta", lambda L, x, t: F(L).huber_loss(x, t, reduction="sum", delta=0.5),
         ([-0.5, 0.0, 0.5, 2.0], [0.0, 0.0, 0.0, 0.0])),
    Case("mse_loss", lambda L, x, t: F(L).mse_loss(x, t), ([0.0, 1.0], [0.0, 2.0])),
    Case("bce at 0 and 1", lambda L, x, t: F(L).binary_cross_entropy(x, t, reduction="none"),
         ([0.0, 0.0, 1.0, 1.0, 0.5], [0.0, 1.0, 0.0, 1.0, 0.5])),
    Case("bce weighted mean", lambda L, x, t, w: F(L).binary_cross_entropy(x, t, w),
         ([0.0, 1.0, 0.25], [0.0, 1.0, 0.5], Const([1.0, 2.0, 3.0]))),
    Case("bce input only", lambda L, x, t: F(L).binary_cross_entropy(x, t),
         ([0.0, 1.0, 0.25, 1.0], Const([0.0, 1.0, 0.5, 0.0]))),
    Case("bce_with_logits at 0", lambda L, x, t: F(L).binary_cross_entropy_with_logits(
        x, t, reduction="none"), ([0.0, 0.0, 0.0, 1.0], [0.0, 1.0, 0.5, 1.0])),
    Case("bce_with_logits weight pos_weight", lambda L, x, t, w, pw:
         F(L).binary_cross_entropy_with_logits(x, t, w, pos_weight=pw),
         ([0.0, 0.0, 2.0], [0.0, 1.0, 0.5], Const([1.0, 2.0, 0.5]), Const([3.0, 0.5, 1.0]))),
    Case("bce_with_logits sum", lambda L, x, t: F(L).binary_cross_entropy_with_logits(
        x, t, reduction="sum"), ([0.0, -30.0, 30.0], [0.0, 1.0, 0.0])),
    Case("cross_entropy", lambda L, x, t: F(L).cross_entropy(x, t),
         ([[0.0, 0.0, 0.0], [1.0, 1.0, -1.0]], Const([0, 1], "int64"))),
    Case("cross_entropy label smoothing", lambda L, x, t: F(L).cross_entropy(
        x, t, label_smoothing=0.2), ([[0.0, 0.0, 0.0], [1.0, 1.0, -1.0]], Const([0, 1], "int64"))),
    Case("cross_entropy smoothing weight ignore", lambda L, x, t, w: F(L).cross_entropy(
        x, t, weight=w, ignore_index=2, label_smoothing=0.3),
        ([[0.0, 0.0, 0.0], [1.0, 1.0, -1.0], [2.0, 0.0, 1.0]], Const([0, 2, 1], "int64"),
         Const([1.0, 2.0, 0.5]))),
    Case("cross_entropy smoothing sum 3d", lambda L, x, t: F(L).cross_entropy(
        x, t, reduction="sum", label_smoothing=0.1),
        ([[[0.0, 1.0], [0.0, 0.0], [2.0, 0.0]]], Const([[0, 2]], "int64"))),
    Case("cross_entropy probabilities smoothing", lambda L, x, t: F(L).cross_entropy(
        x, t, label_smoothing=0.2), ([[0.0, 0.0, 0.0], [1.0, -INF, 0.0]],
                                     [[1.0, 0.0, 0.0], [0.5, 0.0, 0.5]])),
    Case("cross_entropy -inf logit", lambda L, x, t: F(L).cross_entropy(x, t),
         ([[0.0, -INF, 1.0]], Const([0], "int64"))),
    Case("nll_loss", lambda L, x, t, w: F(L).nll_loss(x, t, w),
         ([[0.0, -1.0], [-2.0, 0.0]], Const([0, 1], "int64"), Const([1.0, 3.0]))),
    Case("kl_div at 0", lambda L, x, t: F(L).kl_div(x, t, reduction="batchmean"),
         ([[-1.0, -2.0, 0.0]], [[0.0, 0.5, 0.5]])),
    Case("kl_div log_target", lambda L, x, t: F(L).kl_div(x, t, reduction="sum",
                                                          log_target=True),
         ([[-1.0, 0.0]], [[-INF, 0.0]])),
    Case("poisson_nll_loss", lambda L, x, t: F(L).poisson_nll_loss(x, t, log_input=False),
         ([0.0, 1.0], [0.0, 2.0])),
    Case("poisson_nll_loss full", lambda L, x, t: F(L).poisson_nll_loss(x, t, full=True),
         ([0.0, 1.0, 0.5], [0.0, 1.0, 3.0])),
    Case("gaussian_nll_loss var below eps", lambda L, x, t, v: F(L).gaussian_nll_loss(x, t, v),
         ([0.0, 1.0], [0.0, 0.0], [0.0, 1.0])),
    Case("margin_ranking at margin", lambda L, a, b, y: F(L).margin_ranking_loss(a, b, y),
         ([1.0, 0.0, 2.0], [1.0, 1.0, 0.0], Const([1.0, -1.0, 1.0]))),
    Case("hinge_embedding", lambda L, x, y: F(L).hinge_embedding_loss(x, y),
         ([1.0, 0.0, 2.0], Const([1.0, -1.0, -1.0]))),
    Case("soft_margin", lambda L, x, y: F(L).soft_margin_loss(x, y),
         ([0.0, 1.0], Const([1.0, -1.0]))),
    Case("multi_margin ties", lambda L, x, y: F(L).multi_margin_loss(x, y),
         ([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]], Const([0, 1], "int64"))),
    Case("multilabel_margin", lambda L, x, y: F(L).multilabel_margin_loss(x, y),
         ([[1.0, 0.0, 1.0]], Const([[0, -1, 0]], "int64"))),
    Case("multilabel_soft_margin", lambda L, x, y: F(L).multilabel_soft_margin_loss(x, y),
         ([[0.0, 0.0]], Const([[1.0, 0.0]]))),
    Case("triplet_margin tie", lambda L, a, p, n: F(L).triplet_margin_loss(a, p, n),
         ([[0.0, 0.0]], [[0.0, 0.0]], [[1.0, 0.0]])),
    Case("cosine_embedding zero", lambda L, a, b, y: F(L).cosine_embedding_loss(a, b, y),
         ([[0.0, 0.0], [1.0, 0.0]], [[1.0, 1.0], [1.0, 0.0]], Const([1.0, -1.0]))),
    # -- distributions at boundary parameters --------------------------------------------------
    Case("Bernoulli probs log_prob", lambda L, p: D(L).Bernoulli(probs=p).log_prob(
        L.tensor([1.0, 0.0, 1.0, 0.0, 1.0], dtype=L.float64)), ([0.5, 0.5, 0.0, 1.0, 1.0],)),
    Case("Bernoulli probs entropy", lambda L, p: D(L).Bernoulli(probs=p).entropy(),
         ([0.5, 0.0, 1.0, 0.25],)),
    Case("Bernoulli logits log_prob", lambda L, lg: D(L).Bernoulli(logits=lg).log_prob(
        L.tensor([1.0, 0.0, 1.0], dtype=L.float64)), ([0.0, 0.0, -2.0],)),
    Case("Bernoulli logits entropy", lambda L, lg: D(L).Bernoulli(logits=lg).entropy(),
         ([0.0, 1.0, -40.0],)),
    Case("Bernoulli mean/variance", lambda L, p: (D(L).Bernoulli(probs=p).mean,
                                                   D(L).Bernoulli(probs=p).variance),
         ([0.5, 0.0],)),
    Case("Binomial probs log_prob", lambda L, p: D(L).Binomial(3, probs=p).log_prob(
        L.tensor([0.0, 3.0, 1.0, 3.0], dtype=L.float64)), ([0.5, 0.5, 0.0, 1.0],)),
    Case("Binomial logits log_prob", lambda L, lg: D(L).Binomial(2, logits=lg).log_prob(
        L.tensor([0.0, 1.0, 2.0], dtype=L.float64)), ([0.0, 0.0, 0.0],)),
    Case("Binomial entropy", lambda L, p: D(L).Binomial(2, probs=p).entropy(),
         ([0.5, 0.0],)),
    Case("Geometric probs log_prob", lambda L, p: D(L).Geometric(probs=p).log_prob(
        L.tensor([0.0, 2.0, 0.0, 1.0], dtype=L.float64)), ([0.5, 0.5, 1.0, 1.0],)),
    Case("Geometric entropy", lambda L, p: D(L).Geometric(probs=p).entropy(),
         ([0.5, 1.0, 0.25],)),
    Case("Geometric logits log_prob", lambda L, lg: D(L).Geometric(logits=lg).log_prob(
        L.tensor([0.0, 3.0], dtype=L.float64)), ([0.0, 0.0],)),
    Case("Categorical probs log_prob", lambda L, p: D(L).Categorical(probs=p).log_prob(
        L.tensor([0, 1], dtype=L.int64)), ([[0.5, 0.5, 0.0], [0.0, 1.0, 0.0]],)),
    Case("Categorical probs entropy", lambda L, p: D(L).Categorical(probs=p).entropy(),
         ([[0.5, 0.5, 0.0], [0.0, 1.0, 0.0]],)),
    Case("Categorical logits -inf entropy", lambda L, lg: D(L).Categorical(
        logits=lg).entropy(), ([[0.0, -INF, 0.0]],)),
    Case("OneHotCategorical entropy", lambda L, p: D(L).OneHotCategorical(probs=p).entropy(),
         ([[0.5, 0.5, 0.0]],)),
    Case("Multinomial log_prob", lambda L, p: D(L).Multinomial(3, probs=p).log_prob(
        L.tensor([[2.0, 1.0, 0.0]], dtype=L.float64)), ([[0.5, 0.5, 0.0]],)),
    Case("ContinuousBernoulli at 0.5", lambda L, p: D(L).ContinuousBernoulli(probs=p).log_prob(
        L.tensor([0.3, 0.0, 1.0, 0.7], dtype=L.float64)), ([0.5, 0.5, 0.5, 0.2],)),
    Case("ContinuousBernoulli entropy", lambda L, p: D(L).ContinuousBernoulli(
        probs=p).entropy(), ([0.5, 0.2, 0.499],)),
    Case("ContinuousBernoulli mean/variance", lambda L, p: (
        D(L).ContinuousBernoulli(probs=p).mean, D(L).ContinuousBernoulli(probs=p).variance),
        ([0.5, 0.2],)),
    Case("ContinuousBernoulli cdf", lambda L, p: D(L).ContinuousBernoulli(probs=p).cdf(
        L.tensor([0.3, 0.0, 1.0], dtype=L.float64)), ([0.5, 0.5, 0.2],)),
    # second derivatives go through trigamma, which torch computes to ~5e-10 relative
    # (polygamma(1, 1): torch 1.6449340676, pi^2/6 = 1.6449340668; ember's is scipy's)
    Case("Beta log_prob at 0", lambda L, a, b: D(L).Beta(a, b).log_prob(
        L.tensor([0.0, 0.5, 1.0], dtype=L.float64)), ([1.0, 2.0, 1.0], [1.0, 1.0, 2.0]),
         rtol=1e-8),
    Case("Beta entropy", lambda L, a, b: D(L).Beta(a, b).entropy(), ([1.0, 0.5], [1.0, 2.0]),
         rtol=1e-8),
    Case("Dirichlet log_prob at 0", lambda L, c: D(L).Dirichlet(c).log_prob(
        L.tensor([0.0, 0.5, 0.5], dtype=L.float64)), ([1.0, 2.0, 3.0],), rtol=1e-8),
    Case("Gamma log_prob at 0", lambda L, c, r: D(L).Gamma(c, r).log_prob(
        L.tensor([0.0, 0.0, 1.0], dtype=L.float64)), ([1.0, 2.0, 1.0], [1.0, 1.0, 2.0]),
         rtol=1e-8),
    Case("Exponential log_prob at 0", lambda L, r: D(L).Exponential(r).log_prob(
        L.tensor([0.0, 1.0], dtype=L.float64)), ([1.0, 2.0],)),
    Case("Poisson log_prob rate 0", lambda L, r: D(L).Poisson(r).log_prob(
        L.tensor([0.0, 0.0, 1.0], dtype=L.float64)), ([0.0, 1.0, 2.0],)),
    Case("Laplace log_prob at loc", lambda L, m, s: D(L).Laplace(m, s).log_prob(
        L.tensor([0.0, 1.0], dtype=L.float64)), ([0.0, 0.5], [1.0, 2.0])),
    Case("Laplace cdf at loc", lambda L, m, s: D(L).Laplace(m, s).cdf(
        L.tensor([0.0, 1.0], dtype=L.float64)), ([0.0, 0.5], [1.0, 2.0])),
    Case("Uniform log_prob/entropy", lambda L, a, b: (D(L).Uniform(a, b).log_prob(
        L.tensor([0.0, 1.0], dtype=L.float64)), D(L).Uniform(a, b).entropy()),
        ([0.0, 0.0], [1.0, 1.0])),
    Case("Uniform cdf at bounds", lambda L, a, b: D(L).Uniform(a, b).cdf(
        L.tensor([0.0, 1.0], dtype=L.float64)), ([0.0, 0.0], [1.0, 1.0])),
    Case("HalfNormal log_prob at 0", lambda L, s: D(L).HalfNormal(s).log_prob(
        L.tensor([0.0, 1.0], dtype=L.float64)), ([1.0, 2.0],)),
    Case("HalfCauchy log_prob at 0", lambda L, s: D(L).HalfCauchy(s).log_prob(
        L.tensor([0.0, 1.0], dtype=L.float64)), ([1.0, 2.0],)),
    Case("Pareto log_prob at scale", lambda L, s, a: D(L).Pareto(s, a).log_prob(
        L.tensor([1.0, 2.0], dtype=L.float64)), ([1.0, 1.0], [2.0, 3.0])),
    Case("Kumaraswamy log_prob", lambda L, a, b: D(L).Kumaraswamy(a, b).log_prob(
        L.tensor([0.5, 0.25], dtype=L.float64)), ([1.0, 2.0], [1.0, 0.5])),
    Case("RelaxedBernoulli log_prob", lambda L, p: D(L).RelaxedBernoulli(
        L.tensor(0.5, dtype=L.float64), probs=p).log_prob(L.tensor([0.5, 0.25],
                                                                  dtype=L.float64)),
        ([0.5, 0.5],)),
    Case("Gamma mode at concentration 1", lambda L, c, r: D(L).Gamma(c, r).mode,
         ([1.0, 0.5, 2.0], [1.0, 1.0, 2.0])),
    Case("Dirichlet mode at 1", lambda L, c: D(L).Dirichlet(c).mode, ([1.0, 2.0, 3.0],)),
    Case("Laplace icdf at the median", lambda L, m, s: D(L).Laplace(m, s).icdf(
        L.tensor([0.5, 0.25], dtype=L.float64)), ([0.0, 0.5], [1.0, 2.0])),
    Case("Binomial logits log_prob at count 0", lambda L, lg: D(L).Binomial(
        L.tensor([0.0, 2.0], dtype=L.float64), logits=lg).log_prob(
        L.tensor([0.0, 2.0], dtype=L.float64)), ([0.0, 0.0],)),
    Case("SigmoidTransform log det", lambda L, x: D(L).transforms.SigmoidTransform()
         .log_abs_det_jacobian(x, x.sigmoid()), ([0.0, 40.0, -40.0],)),
    Case("TanhTransform log det", lambda L, x: D(L).transforms.TanhTransform()
         .log_abs_det_jacobian(x, x.tanh()), ([0.0, 20.0],)),
    Case("StickBreakingTransform", lambda L, x: D(L).transforms.StickBreakingTransform()(x),
         ([0.0, 0.0, 0.0],)),
    Case("kl Bernoulli Bernoulli at 0/1", lambda L, p, q: D(L).kl_divergence(
        D(L).Bernoulli(probs=p), D(L).Bernoulli(probs=q)),
        ([0.0, 1.0, 0.5, 0.5], [0.5, 0.5, 0.5, 0.25])),
    Case("kl Categorical with zeros", lambda L, p, q: D(L).kl_divergence(
        D(L).Categorical(probs=p), D(L).Categorical(probs=q)),
        ([[0.5, 0.5, 0.0]], [[0.25, 0.5, 0.25]])),
    Case("kl Geometric", lambda L, p, q: D(L).kl_divergence(
        D(L).Geometric(probs=p), D(L).Geometric(probs=q)), ([0.5, 1.0], [0.5, 0.25])),
    Case("kl Binomial", lambda L, p, q: D(L).kl_divergence(
        D(L).Binomial(2, probs=p), D(L).Binomial(2, probs=q)), ([0.5, 0.0], [0.5, 0.5])),
    Case("kl Uniform", lambda L, a, b: D(L).kl_divergence(
        D(L).Uniform(a, b), D(L).Uniform(a - 1, b)), ([0.0], [1.0])),
    Case("kl Laplace", lambda L, m, s: D(L).kl_divergence(
        D(L).Laplace(m, s), D(L).Laplace(m * 0, s * 0 + 1)), ([0.0, 1.0], [1.0, 1.0])),
]


# -- running one case under a library ------------------------------------------------------------
def _flatten(out):
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in _flatten(o)]
    return [out]


def _weights(n, shift):
    """A fixed cotangent with distinct entries, so a tie's split shows."""
    return np.round(1.0 + 0.25 * ((np.arange(n) + shift) % 7), 2)


def _numpy(lib, t):
    if t is None:
        return None
    if getattr(t, "_is_zerotensor", lambda: False)():   # torch's efficient zeros
        return np.zeros(tuple(t.shape))
    return t.detach().numpy()


def run(lib, case):
    """(outputs, first derivatives, second derivatives or None) as numpy, under ``lib``."""
    args, leaves = [], []
    for a in case.args:
        if isinstance(a, Const):
            args.append(lib.tensor(np.asarray(a.values), dtype=getattr(lib, a.dtype)))
        else:
            values = np.asarray(a)
            values = values.astype(np.complex128 if values.dtype.kind == "c" else np.float64)
            t = lib.tensor(values, requires_grad=True)
            args.append(t)
            leaves.append(t)
    outs = [o for o in _flatten(case.fn(lib, *args))
            if o.dtype in (lib.float64, lib.complex128) and o.requires_grad]
    values = [o.detach().numpy() for o in outs]
    cot = [lib.tensor(_weights(o.numel(), k).reshape(tuple(o.shape)), dtype=o.dtype)
           for k, o in enumerate(outs)]
    grads = lib.autograd.grad(outs, leaves, cot, create_graph=True, allow_unused=True)
    first = [np.zeros(tuple(x.shape)) if g is None else _numpy(lib, g)
             for g, x in zip(grads, leaves)]
    second = None
    if case.second:
        terms = [(g * lib.tensor(_weights(g.numel(), 3 + k).reshape(tuple(g.shape)),
                                 dtype=g.dtype)).sum()
                 for k, g in enumerate(grads) if g is not None and g.requires_grad]
        if terms:
            total = terms[0]
            for t in terms[1:]:
                total = total + t
            g2 = lib.autograd.grad(total, leaves, allow_unused=True)
            second = [np.zeros(tuple(x.shape)) if g is None else _numpy(lib, g)
                      for g, x in zip(g2, leaves)]
        else:
            second = [np.zeros(tuple(x.shape)) for x in leaves]
    return values, first, second


def _same(a, b, rtol):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    try:
        np.testing.assert_allclose(a, b, rtol=rtol, atol=ATOL, equal_nan=True)
    except AssertionError:
        return False
    return True


def _first_only(case):
    return Case(case.name, case.fn, case.args, False, case.rtol)


def compare(case):
    """None when ember agrees with torch, else a description of the first difference."""
    import torch
    try:
        expected = run(torch, case)
    except Exception as e:  # torch refuses the program (e.g. no double backward): not compared
        try:
            t_values, t_first, _ = run(torch, _first_only(case))
        except Exception:
            return f"torch raised {type(e).__name__}: {e}"
        expected = (t_values, t_first, None)
    try:
        got = run(ember, case if expected[2] is not None else _first_only(case))
    except Exception as e:
        return f"ember raised {type(e).__name__}: {e}"
    for what, e, g in (("value", expected[0], got[0]), ("gradient", expected[1], got[1]),
                       ("second derivative", expected[2], got[2])):
        if e is None:
            continue
        if len(e) != len(g):
            return f"{what}: {len(g)} results, torch {len(e)}"
        for k, (x, y) in enumerate(zip(e, g)):
            if not _same(x, y, case.rtol):
                return f"{what} {k}: ember {y.tolist()}, torch {x.tolist()}"
    return None


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_gradient_at_kink_equals_torch(case):
    pytest.importorskip("torch")
    problem = compare(case)
    assert problem is None, f"{case.name}: {problem}"


def test_case_names_are_unique():
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))


if __name__ == "__main__":
    import warnings
    warnings.simplefilter("ignore")
    differ = 0
    for c in CASES:
        p = compare(c)
        if p is not None:
            differ += 1
            print(f"DIFF {c.name}: {p}"[:400])
    print(f"{len(CASES)} cases compared, {differ} differ")
