"""Seven models a practitioner might write for scikit-learn's 8x8 digits (inputs ``(N, 1, 8, 8)``), in
plain PyTorch, each with its own init conventions; factories take ``depth`` (blocks) and ``width``.
No test builds them: they are the held-out models of the plan ``validate/plans/TRANSFER_PROBE.md``.

=============  =================================================================================
``wrn``        pre-activation WideResNet: BN-ReLU-conv-BN-ReLU-conv branches, the channel count
               doubling at the middle block through a 1x1 projection shortcut
``convnext``   ConvNeXt-like: depthwise 3x3 conv, channel LayerNorm, 4x pointwise MLP with GELU,
               layer scale initialised at 1e-6
``vit``        a ViT on 2x2 patches: hand-written pre-LN attention (qkv Linear, softmax), GELU MLP,
               learned position embeddings, mean-pooled tokens
``mixer``      MLP-Mixer-like: token-mixing and channel-mixing MLPs, pre-LN, on 2x2 patches
``postnorm``   post-norm residual MLP on the flattened pixels: ``x = LN(x + W2 relu(W1 x))``
``skipinit``   a conv ResNet without normalisation whose branch ends start at zero (SkipInit/Fixup
               style: ``x + conv2(relu(conv1(x)))`` with ``conv2`` zero-initialised), He init
``dwchain``    a plain chain (no skip) of depthwise-separable conv blocks with BatchNorm
=============  =================================================================================
"""

import math

import torch
from torch import nn
from torch.nn import functional as F


# ----------------------------------------------------------------------------- WideResNet
class PreActBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int):
        super().__init__()
        self.bn1, self.conv1 = nn.BatchNorm2d(c_in), nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)
        self.bn2, self.conv2 = nn.BatchNorm2d(c_out), nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.shortcut = nn.Conv2d(c_in, c_out, 1, bias=False) if c_in != c_out else None

    def forward(self, x):
        a = F.relu(self.bn1(x))
        skip = x if self.shortcut is None else self.shortcut(a)
        return skip + self.conv2(F.relu(self.bn2(self.conv1(a))))


class WRN(nn.Module):
    def __init__(self, depth: int, width: int):
        super().__init__()
        widths = [width if i < depth // 2 else 2 * width for i in range(depth)]
        self.stem = nn.Conv2d(1, width, 3, padding=1, bias=False)
        self.blocks = nn.Sequential(*[PreActBlock(a, b) for a, b in zip([width] + widths[:-1], widths)])
        self.bn = nn.BatchNorm2d(widths[-1])
        self.head = nn.Linear(widths[-1], 10)

    def forward(self, x):
        return self.head(F.relu(self.bn(self.blocks(self.stem(x)))).mean((2, 3)))


def wrn(depth: int = 2, width: int = 8) -> nn.Module:
    return WRN(depth, width)


# ----------------------------------------------------------------------------- ConvNeXt-like
class ChannelNorm(nn.Module):
    """LayerNorm over the channels of an ``(N, C, H, W)`` tensor."""

    def __init__(self, c: int):
        super().__init__()
        self.norm = nn.LayerNorm(c)

    def forward(self, x):
        return self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class ConvNeXtBlock(nn.Module):
    def __init__(self, c: int, layer_scale: float = 1e-6):
        super().__init__()
        self.dw = nn.Conv2d(c, c, 3, padding=1, groups=c)
        self.norm = ChannelNorm(c)
        self.pw1, self.pw2 = nn.Conv2d(c, 4 * c, 1), nn.Conv2d(4 * c, c, 1)
        self.gamma = nn.Parameter(torch.full((c, 1, 1), layer_scale))

    def forward(self, x):
        return x + self.gamma * self.pw2(F.gelu(self.pw1(self.norm(self.dw(x)))))


class ConvNeXt(nn.Module):
    def __init__(self, depth: int, width: int):
        super().__init__()
        self.stem = nn.Conv2d(1, width, 2, stride=2)
        self.stem_norm = ChannelNorm(width)
        self.blocks = nn.Sequential(*[ConvNeXtBlock(width) for _ in range(depth)])
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        return self.head(self.norm(self.blocks(self.stem_norm(self.stem(x))).mean((2, 3))))


def convnext(depth: int = 2, width: int = 16) -> nn.Module:
    return ConvNeXt(depth, width)


# ----------------------------------------------------------------------------- patches
def patches(x, p: int = 2):
    """``(N, 1, 8, 8)`` -> ``(N, 16, p*p)`` tokens of non-overlapping ``p x p`` patches."""
    n = x.shape[0]
    return x.reshape(n, 8 // p, p, 8 // p, p).permute(0, 1, 3, 2, 4).reshape(n, (8 // p) ** 2, p * p)


# ----------------------------------------------------------------------------- ViT
class SelfAttention(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):
        n, t, d = x.shape
        q, k, v = self.qkv(x).reshape(n, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d // self.heads), dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(n, t, d))


class ViTBlock(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.ln1, self.attn = nn.LayerNorm(d), SelfAttention(d, heads)
        self.ln2 = nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class ViT(nn.Module):
    def __init__(self, depth: int, width: int, heads: int = 2):
        super().__init__()
        self.embed = nn.Linear(4, width)
        self.pos = nn.Parameter(torch.randn(1, 16, width) * 0.02)
        self.blocks = nn.Sequential(*[ViTBlock(width, heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        h = self.blocks(self.embed(patches(x)) + self.pos)
        return self.head(self.norm(h).mean(1))


def vit(depth: int = 2, width: int = 16) -> nn.Module:
    return ViT(depth, width)


# ----------------------------------------------------------------------------- MLP-Mixer-like
class MixerBlock(nn.Module):
    def __init__(self, tokens: int, d: int):
        super().__init__()
        self.ln1, self.tok1, self.tok2 = nn.LayerNorm(d), nn.Linear(tokens, 2 * tokens), nn.Linear(2 * tokens, tokens)
        self.ln2, self.ch1, self.ch2 = nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.Linear(2 * d, d)

    def forward(self, x):
        x = x + self.tok2(F.gelu(self.tok1(self.ln1(x).transpose(1, 2)))).transpose(1, 2)
        return x + self.ch2(F.gelu(self.ch1(self.ln2(x))))


class Mixer(nn.Module):
    def __init__(self, depth: int, width: int):
        super().__init__()
        self.embed = nn.Linear(4, width)
        self.blocks = nn.Sequential(*[MixerBlock(16, width) for _ in range(depth)])
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        return self.head(self.norm(self.blocks(self.embed(patches(x)))).mean(1))


def mixer(depth: int = 2, width: int = 16) -> nn.Module:
    return Mixer(depth, width)


# ----------------------------------------------------------------------------- post-norm residual MLP
class PostNormBlock(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.fc1, self.fc2, self.ln = nn.Linear(d, d), nn.Linear(d, d), nn.LayerNorm(d)

    def forward(self, x):
        return self.ln(x + self.fc2(F.relu(self.fc1(x))))


class PostNormMLP(nn.Module):
    def __init__(self, depth: int, width: int):
        super().__init__()
        self.embed = nn.Linear(64, width)
        self.blocks = nn.Sequential(*[PostNormBlock(width) for _ in range(depth)])
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        return self.head(self.blocks(self.embed(x.flatten(1))))


def postnorm(depth: int = 2, width: int = 32) -> nn.Module:
    return PostNormMLP(depth, width)


# ----------------------------------------------------------------------------- SkipInit conv ResNet
class SkipInitBlock(nn.Module):
    def __init__(self, c: int):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(c, c, 3, padding=1), nn.Conv2d(c, c, 3, padding=1)
        nn.init.kaiming_normal_(self.conv1.weight, nonlinearity="relu")
        nn.init.zeros_(self.conv1.bias)
        nn.init.zeros_(self.conv2.weight)
        nn.init.zeros_(self.conv2.bias)

    def forward(self, x):
        return x + self.conv2(F.relu(self.conv1(x)))


class SkipInitNet(nn.Module):
    def __init__(self, depth: int, width: int):
        super().__init__()
        self.stem = nn.Conv2d(1, width, 3, padding=1)
        nn.init.kaiming_normal_(self.stem.weight, nonlinearity="relu")
        self.blocks = nn.Sequential(*[SkipInitBlock(width) for _ in range(depth)])
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        return self.head(F.relu(self.blocks(self.stem(x))).mean((2, 3)))


def skipinit(depth: int = 2, width: int = 16) -> nn.Module:
    return SkipInitNet(depth, width)


# ----------------------------------------------------------------------------- depthwise-separable chain
class SeparableBlock(nn.Module):
    def __init__(self, c: int):
        super().__init__()
        self.dw, self.pw = nn.Conv2d(c, c, 3, padding=1, groups=c, bias=False), nn.Conv2d(c, c, 1, bias=False)
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x):
        return F.relu(self.bn(self.pw(self.dw(x))))


class SeparableChain(nn.Module):
    def __init__(self, depth: int, width: int):
        super().__init__()
        self.stem = nn.Conv2d(1, width, 3, padding=1, bias=False)
        self.blocks = nn.Sequential(*[SeparableBlock(width) for _ in range(depth)])
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        return self.head(self.blocks(F.relu(self.stem(x))).mean((2, 3)))


def dwchain(depth: int = 2, width: int = 16) -> nn.Module:
    return SeparableChain(depth, width)


#: name -> (factory, width used by the plan)
MODELS = {"wrn": (wrn, 8), "convnext": (convnext, 16), "vit": (vit, 16), "mixer": (mixer, 16),
          "postnorm": (postnorm, 32), "skipinit": (skipinit, 16), "dwchain": (dwchain, 16)}
