"""The symbols of the depth law, defined once with their assumptions.

=========  ==================================================================
``L``      depth: number of pre-activation tensors (conv layers)
``l``      index of a pre-activation, 1 <= l <= L
``j, jp``  indices of the two updated layers in a pair of the expansion
``m``      ``max(j, jp)``: the deepest updated layer of a pair
``a``      coherent constant: ``E[J J^T] = I`` part of every pair
``b``      fluctuation constant: per-layer variance of ``J J^T`` accumulated above ``m``
``e``      local constant: the part of ``s_l`` that does not accumulate with depth
``epsilon``  Gram weight of the first layer relative to hidden layers
``lambda_``  finite-width growth per layer, ``1 + gamma / n``
``gamma``  finite-width excess per layer
``n``      width (channels)
``C``      target one-step second moment (AM-muP fixes ``(1/L) sum_l eta^2 s_l = C``)
``x``      ``1 / L``, the expansion variable of the finite-depth series
``sigma2_0``, ``kappa``  seed spread ``Var[ln s_bar] = sigma2_0 + kappa L^p`` (lognormal model)
``p``      power of the spread: 1 for chains (independent log-fluctuations per layer add up), -1 for
           forward-stable residual nets (K blocks of variance O(1/K) each: bounded plus O(1/K))
=========  ==================================================================
"""

import sympy as sp

L = sp.Symbol("L", integer=True, positive=True)
l = sp.Symbol("l", integer=True, positive=True)
j = sp.Symbol("j", integer=True, positive=True)
jp = sp.Symbol("jp", integer=True, positive=True)
m = sp.Symbol("m", integer=True, positive=True)

a = sp.Symbol("a", positive=True)
b = sp.Symbol("b", positive=True)
e = sp.Symbol("e", nonnegative=True)
epsilon = sp.Symbol("epsilon", nonnegative=True)
lambda_ = sp.Symbol("lambda", positive=True)
gamma = sp.Symbol("gamma", real=True)
n = sp.Symbol("n", positive=True)
C = sp.Symbol("C", positive=True)
x = sp.Symbol("x", positive=True)
sigma2_0 = sp.Symbol("sigma2_0", real=True)
kappa = sp.Symbol("kappa", real=True)
p = sp.Symbol("p", real=True)

CONSTANTS = (a, b, e, epsilon)
