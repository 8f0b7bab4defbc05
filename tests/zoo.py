"""Hand-built models whose path lengths are known by construction (default weights: parameterised
layer 1, residual addition 1, normalisation 0, everything else 0).

Each factory's docstring gives the paths and the expected numbers; ``EXPECTED`` collects them as
``(factory, kwargs, input_shape, effective_depth, longest_path, blocks, path lengths)`` where
``path lengths`` is the multiset of all input -> output path lengths (so
``path_sum_cubed = sum L^3``).
"""

from __future__ import annotations

import math
from itertools import product

import torch
from torch import nn


class PlainCNN(nn.Module):
    """L convs (+ReLU), global pool, linear head.  One path: conv_1 ... conv_L, fc -> L + 1."""

    def __init__(self, L=4, c=4):
        super().__init__()
        self.convs = nn.Sequential(*[m for i in range(L) for m in (nn.Conv2d(3 if i == 0 else c, c, 3, padding=1),
                                                                   nn.ReLU())])
        self.fc = nn.Linear(c, 10)

    def forward(self, x):
        x = self.convs(x)
        x = x.mean(dim=(2, 3))
        return self.fc(x)


class BasicBlock(nn.Module):
    """y = relu(x + conv2(relu(conv1(x)))): skip path 1 (the add), branch path 3 (2 convs + add)."""

    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return torch.relu(x + self.conv2(torch.relu(self.conv1(x))))


class ResNet(nn.Module):
    """stem conv, K identity blocks, pool, fc.

    shortest: stem, add_1 ... add_K (all skips), fc = K + 2;  longest: 1 + 3K + 1 = 3K + 2;
    2^K paths, length 2 + K + 2j with j traversed branches; blocks = K (residual additions).
    """

    def __init__(self, K=3, c=4):
        super().__init__()
        self.stem = nn.Conv2d(3, c, 3, padding=1)
        self.blocks = nn.Sequential(*[BasicBlock(c) for _ in range(K)])
        self.fc = nn.Linear(c, 10)

    def forward(self, x):
        x = self.blocks(torch.relu(self.stem(x)))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class BNBlock(nn.Module):
    """branch conv-bn-relu-conv-bn; shortcut identity or conv1x1-bn; relu(branch + shortcut)."""

    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride), nn.BatchNorm2d(cout))
                         if (cin != cout or stride != 1) else nn.Identity())

    def forward(self, x):
        out = self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x)))))
        out += self.shortcut(x)  # iadd: a residual addition too
        return torch.relu(out)


class ProjResNet(nn.Module):
    """stem, [identity 4->4, projection 4->8 stride 2, identity 8->8], pool, fc.

    Default weights (norm 0): identity block {1 skip, 3 branch}, projection block {2 = 1x1 conv +
    add, 3}.  shortest: stem, add, sc-conv, add, add, fc = 6; longest 1 + 3 + 3 + 3 + 1 = 11;
    8 paths.  With norm = 1: identity {1, 5}, projection {3 = conv + bn + add, 5}: 7 and 17.
    """

    def __init__(self, c=4):
        super().__init__()
        self.stem = nn.Conv2d(3, c, 3, padding=1)
        self.layer = nn.Sequential(BNBlock(c, c), BNBlock(c, 2 * c, stride=2), BNBlock(2 * c, 2 * c))
        self.fc = nn.Linear(2 * c, 10)

    def forward(self, x):
        x = self.layer(self.stem(x))
        return self.fc(x.mean(dim=(2, 3)))


class Attention(nn.Module):
    """Multi-head self-attention from nn.Linear: q, k, v, out.  Three paths ln -> {q, k, v} -> out,
    each with 2 layers (q @ k^T and softmax between activations weigh 0)."""

    def __init__(self, d, heads=2):
        super().__init__()
        self.h = heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x):
        B, T, D = x.shape[0], x.shape[1], x.shape[2]
        dh = D // self.h
        q = self.q(x).view(B, T, self.h, dh).transpose(1, 2)
        k = self.k(x).view(B, T, self.h, dh).transpose(1, 2)
        v = self.v(x).view(B, T, self.h, dh).transpose(1, 2)
        att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(dh), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, D)
        return self.o(y)


class PreLNBlock(nn.Module):
    """x = x + attn(ln1(x)); x = x + mlp(ln2(x)).  Attention part {1 skip, 3 branch (x3 paths)},
    MLP part {1, 3}: per block 2 ... 6, 8 paths."""

    def __init__(self, d):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = Attention(d)
        self.fc1, self.fc2 = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x))))


class Transformer(nn.Module):
    """embed (Linear), N pre-LN blocks, final LN, head.

    shortest: embed, 2N additions, head = 2N + 2; longest 2 + 6N; 8^N paths; blocks = 2N.
    """

    def __init__(self, N=2, d=8, din=5):
        super().__init__()
        self.embed = nn.Linear(din, d)
        self.blocks = nn.ModuleList([PreLNBlock(d) for _ in range(N)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, 3)

    def forward(self, x):
        x = self.embed(x)
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


class MHAModel(nn.Module):
    """embed, x + MultiheadAttention(x, x, x) (a torch.nn leaf: ONE layer), head.
    paths: embed-add-head 3, embed-mha-add-head 4."""

    def __init__(self, d=8):
        super().__init__()
        self.embed = nn.Linear(5, d)
        self.mha = nn.MultiheadAttention(d, 2, batch_first=True)
        self.head = nn.Linear(d, 3)

    def forward(self, x):
        x = self.embed(x)
        x = x + self.mha(x, x, x, need_weights=False)[0]
        return self.head(x)


class InceptionModule(nn.Module):
    """Four branches concatenated: 1x1 (1), 1x1-3x3 (2), 1x1-3x3-3x3 (3), maxpool-1x1 (1)."""

    def __init__(self, c):
        super().__init__()
        conv = lambda k: nn.Conv2d(c, c, k, padding=k // 2)  # noqa: E731
        self.b1 = conv(1)
        self.b2 = nn.Sequential(conv(1), nn.ReLU(), conv(3))
        self.b3 = nn.Sequential(conv(1), nn.ReLU(), conv(3), nn.ReLU(), conv(3))
        self.b4 = nn.Sequential(nn.MaxPool2d(3, stride=1, padding=1), conv(1))
        self.reduce = nn.Conv2d(4 * c, c, 1)

    def forward(self, x):
        return self.reduce(torch.cat([self.b1(x), self.b2(x), self.b3(x), self.b4(x)], dim=1))


class Inception(nn.Module):
    """stem, M inception modules (branches {1, 2, 3, 1} + 1x1 reduce), pool, fc.

    shortest = shortest branch: 1 + M (1 + 1) + 1 = 2M + 2; longest 1 + 4M + 1 = 4M + 2; 4^M paths;
    blocks (no residual addition) = most layers on a path = 4M + 2.
    """

    def __init__(self, M=2, c=4):
        super().__init__()
        self.stem = nn.Conv2d(3, c, 3, padding=1)
        self.mods = nn.Sequential(*[InceptionModule(c) for _ in range(M)])
        self.fc = nn.Linear(c, 10)

    def forward(self, x):
        return self.fc(self.mods(self.stem(x)).mean(dim=(2, 3)))


class DenseNet(nn.Module):
    """stem, dense block of m layers (layer i sees cat(x_0 ... x_{i-1})), cat of all, 1x1 transition, fc.

    A path picks an increasing subset of the m layers: 2^m paths of length 3 + |subset|;
    shortest (x_0 straight into the final cat) 3, longest m + 3, blocks = m + 3.
    """

    def __init__(self, m=3, c=2):
        super().__init__()
        self.stem = nn.Conv2d(3, c, 3, padding=1)
        self.layers = nn.ModuleList([nn.Conv2d(c * (i + 1), c, 3, padding=1) for i in range(m)])
        self.trans = nn.Conv2d(c * (m + 1), c, 1)
        self.fc = nn.Linear(c, 10)

    def forward(self, x):
        feats = [self.stem(x)]
        for layer in self.layers:
            feats.append(torch.relu(layer(torch.cat(feats, dim=1))))
        x = self.trans(torch.cat(feats, dim=1))
        return self.fc(x.mean(dim=(2, 3)))


class UNet(nn.Module):
    """enc1 -> pool -> enc2 -> pool -> mid -> up -> cat(enc2) -> dec2 -> up -> cat(enc1) -> dec1 -> out.

    paths: enc1, dec1, out = 3; enc1, enc2, dec2, dec1, out = 5; enc1, enc2, mid, dec2, dec1, out = 6.
    shortest 3, longest 6, 3 paths, blocks 6.  Input side divisible by 4.
    """

    def __init__(self, c=2):
        super().__init__()
        self.enc1 = nn.Conv2d(3, c, 3, padding=1)
        self.enc2 = nn.Conv2d(c, c, 3, padding=1)
        self.mid = nn.Conv2d(c, c, 3, padding=1)
        self.dec2 = nn.Conv2d(2 * c, c, 3, padding=1)
        self.dec1 = nn.Conv2d(2 * c, c, 3, padding=1)
        self.out = nn.Conv2d(c, 1, 1)
        self.pool, self.up = nn.MaxPool2d(2), nn.Upsample(scale_factor=2)

    def forward(self, x):
        e1 = torch.relu(self.enc1(x))
        e2 = torch.relu(self.enc2(self.pool(e1)))
        m = torch.relu(self.mid(self.pool(e2)))
        d2 = torch.relu(self.dec2(torch.cat([self.up(m), e2], dim=1)))
        d1 = torch.relu(self.dec1(torch.cat([self.up(d2), e1], dim=1)))
        return self.out(d1)


class SkipChain(nn.Module):
    """n blocks x = x + lin_i(x), no stem/head: with residual weight 0 a path's length is the number
    k of traversed blocks, so path_sum_cubed = sum_k C(n, k) k^3 = 2^(n-3) n^2 (n + 3)."""

    def __init__(self, n=4, d=3):
        super().__init__()
        self.lins = nn.ModuleList([nn.Linear(d, d) for _ in range(n)])

    def forward(self, x):
        for lin in self.lins:
            x = x + lin(x)
        return x


class FunctionalLinear(nn.Module):
    """x @ self.w (a get_attr parameter: a layer), + self.b (bias: 0), then F.linear(h, self.w2): 2."""

    def __init__(self, d=3):
        super().__init__()
        self.w = nn.Parameter(torch.randn(d, d))
        self.b = nn.Parameter(torch.zeros(d))
        self.w2 = nn.Parameter(torch.randn(d, d))

    def forward(self, x):
        h = torch.relu(x @ self.w + self.b)
        return nn.functional.linear(h, self.w2) + x.new_zeros(x.shape)  # new_zeros: shape only


class Gate(nn.Module):
    def __init__(self, d=3):
        super().__init__()
        self.lin = nn.Linear(d, d)

    def forward(self, x):
        if x.sum() > 0:  # data-dependent control flow: torch.fx cannot trace it
            return self.lin(x)
        return x


class DataDependent(nn.Module):
    """Linear, then a Gate with `if x.sum() > 0:`; as a leaf the Gate counts as one layer: 2."""

    def __init__(self, d=3):
        super().__init__()
        self.inp = nn.Linear(d, d)
        self.gate = Gate(d)

    def forward(self, x):
        return self.gate(self.inp(x))


def _lengths(*choices):
    """All sums of one pick per group (path lengths of a series of parallel groups)."""
    return sorted(sum(p) for p in product(*choices))


IMG = (1, 3, 8, 8)
EXPECTED = {
    # name: (factory, kwargs, input shape, effective depth, longest, blocks, path lengths)
    "plain_cnn": (PlainCNN, {"L": 4}, IMG, 5, 5, 5, [5]),
    "resnet": (ResNet, {"K": 3}, IMG, 5, 11, 3, _lengths([1], [1, 3], [1, 3], [1, 3], [1])),
    "proj_resnet": (ProjResNet, {}, IMG, 6, 11, 3, _lengths([1], [1, 3], [2, 3], [1, 3], [1])),
    "transformer": (Transformer, {"N": 2}, (2, 4, 5), 6, 14, 4,
                    _lengths([1], [1, 3, 3, 3], [1, 3], [1, 3, 3, 3], [1, 3], [1])),
    "mha": (MHAModel, {}, (2, 4, 5), 3, 4, 1, [3, 4]),
    "inception": (Inception, {"M": 2}, IMG, 6, 10, 10, _lengths([1], [2, 3, 4, 2], [2, 3, 4, 2], [1])),
    "densenet": (DenseNet, {"m": 3}, IMG, 3, 6, 6, sorted(3 + r for r in range(4) for _ in range(math.comb(3, r)))),
    "unet": (UNet, {}, IMG, 3, 6, 6, [3, 5, 6]),
    "functional_linear": (FunctionalLinear, {}, (2, 3), 2, 2, 2, [2]),
}
