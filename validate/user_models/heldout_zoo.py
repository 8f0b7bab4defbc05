"""Eight more models a practitioner might write for scikit-learn's 8x8 digits (inputs ``(N, 1, 8, 8)``,
logits ``(N, 10)``), in plain PyTorch with PyTorch's default inits unless stated; factories take ``depth``
(blocks) and ``width``.  No test builds them: they are the held-out models of the plan
``validate/plans/TRANSFER_PROBE_2.md``, written for it and never trained before it.

===================  ==========================================================================
``resnet_gn``        post-activation conv ResNet with GroupNorm(4): ``relu(x + gn(conv(relu(gn(conv x)))))``
``preln_mlp``        pre-LayerNorm residual MLP on the flattened pixels, GELU, hidden 2x
``vgg_bn``           a plain chain of conv3x3-BatchNorm-ReLU blocks
``rms_transformer``  the 8 rows as tokens, learned positions, hand-written 2-head attention, RMSNorm
``scaled_resmlp``    residual MLP without normalisation, branches divided by sqrt(depth), He init
``convmixer``        ConvMixer-like: 2x2 patch embedding, depthwise residual + pointwise, GELU, BatchNorm
``glu_resmlp``       pre-LayerNorm residual MLP with a SwiGLU branch (no biases)
``densecat``         blocks that concatenate the input with a 3x3 conv of it, then project back (1x1, BN)
===================  ==========================================================================
"""

import math

import torch
from torch import nn
from torch.nn import functional as F


# ----------------------------------------------------------------------------- GroupNorm ResNet
class GNBlock(nn.Module):
    def __init__(self, c: int):
        super().__init__()
        self.conv1, self.conv2 = (nn.Conv2d(c, c, 3, padding=1, bias=False) for _ in range(2))
        self.gn1, self.gn2 = nn.GroupNorm(4, c), nn.GroupNorm(4, c)

    def forward(self, x):
        return F.relu(x + self.gn2(self.conv2(F.relu(self.gn1(self.conv1(x))))))


class ResNetGN(nn.Module):
    def __init__(self, depth: int, width: int):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, width, 3, padding=1, bias=False), nn.GroupNorm(4, width), nn.ReLU())
        self.blocks = nn.Sequential(*[GNBlock(width) for _ in range(depth)])
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


def resnet_gn(depth: int = 2, width: int = 16) -> nn.Module:
    return ResNetGN(depth, width)


# ----------------------------------------------------------------------------- pre-LN residual MLP
class PreLNBlock(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.ln, self.fc1, self.fc2 = nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.Linear(2 * d, d)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.ln(x))))


class PreLNMLP(nn.Module):
    def __init__(self, depth: int, width: int):
        super().__init__()
        self.embed = nn.Linear(64, width)
        self.blocks = nn.Sequential(*[PreLNBlock(width) for _ in range(depth)])
        self.norm, self.head = nn.LayerNorm(width), nn.Linear(width, 10)

    def forward(self, x):
        return self.head(self.norm(self.blocks(self.embed(x.flatten(1)))))


def preln_mlp(depth: int = 2, width: int = 64) -> nn.Module:
    return PreLNMLP(depth, width)


# ----------------------------------------------------------------------------- VGG-like BatchNorm chain
class VGGBN(nn.Module):
    def __init__(self, depth: int, width: int):
        super().__init__()
        self.stem = nn.Conv2d(1, width, 3, padding=1)
        self.blocks = nn.Sequential(*[nn.Sequential(nn.Conv2d(width, width, 3, padding=1, bias=False),
                                                    nn.BatchNorm2d(width), nn.ReLU()) for _ in range(depth)])
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


def vgg_bn(depth: int = 2, width: int = 16) -> nn.Module:
    return VGGBN(depth, width)


# ----------------------------------------------------------------------------- RMSNorm Transformer
class RMSNorm(nn.Module):
    def __init__(self, d: int, eps: float = 1e-6):
        super().__init__()
        self.gain, self.eps = nn.Parameter(torch.ones(d)), eps

    def forward(self, x):
        return self.gain * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)


class Attention(nn.Module):
    def __init__(self, d: int, heads: int = 2):
        super().__init__()
        self.heads, self.qkv, self.out = heads, nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d // self.heads), dim=-1)
        return self.out((att @ v).transpose(1, 2).reshape(b, t, d))


class RMSBlock(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.rms1, self.attn = RMSNorm(d), Attention(d)
        self.rms2, self.mlp = RMSNorm(d), nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.attn(self.rms1(x))
        return x + self.mlp(self.rms2(x))


class RMSTransformer(nn.Module):
    def __init__(self, depth: int, width: int):
        super().__init__()
        self.embed = nn.Linear(8, width)
        self.pos = nn.Parameter(torch.randn(1, 8, width) * 0.02)
        self.blocks = nn.Sequential(*[RMSBlock(width) for _ in range(depth)])
        self.norm, self.head = RMSNorm(width), nn.Linear(width, 10)

    def forward(self, x):
        h = self.embed(x.reshape(x.shape[0], 8, 8)) + self.pos
        return self.head(self.norm(self.blocks(h)).mean(1))


def rms_transformer(depth: int = 2, width: int = 32) -> nn.Module:
    return RMSTransformer(depth, width)


# ----------------------------------------------------------------------------- 1/sqrt(depth) residual MLP
class ScaledBlock(nn.Module):
    def __init__(self, d: int, depth: int):
        super().__init__()
        self.fc1, self.fc2, self.scale = nn.Linear(d, d), nn.Linear(d, d), 1.0 / math.sqrt(depth)
        for fc in (self.fc1, self.fc2):
            nn.init.kaiming_normal_(fc.weight, nonlinearity="relu")
            nn.init.zeros_(fc.bias)

    def forward(self, x):
        return x + self.fc2(F.relu(self.fc1(x))) * self.scale


class ScaledResMLP(nn.Module):
    def __init__(self, depth: int, width: int):
        super().__init__()
        self.embed = nn.Linear(64, width)
        self.blocks = nn.Sequential(*[ScaledBlock(width, depth) for _ in range(depth)])
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        return self.head(F.relu(self.blocks(self.embed(x.flatten(1)))))


def scaled_resmlp(depth: int = 2, width: int = 64) -> nn.Module:
    return ScaledResMLP(depth, width)


# ----------------------------------------------------------------------------- ConvMixer-like
class MixerConvBlock(nn.Module):
    def __init__(self, c: int):
        super().__init__()
        self.dw, self.bn1 = nn.Conv2d(c, c, 3, padding=1, groups=c), nn.BatchNorm2d(c)
        self.pw, self.bn2 = nn.Conv2d(c, c, 1), nn.BatchNorm2d(c)

    def forward(self, x):
        x = x + self.bn1(F.gelu(self.dw(x)))
        return self.bn2(F.gelu(self.pw(x)))


class ConvMixer(nn.Module):
    def __init__(self, depth: int, width: int):
        super().__init__()
        self.embed = nn.Sequential(nn.Conv2d(1, width, 2, stride=2), nn.GELU(), nn.BatchNorm2d(width))
        self.blocks = nn.Sequential(*[MixerConvBlock(width) for _ in range(depth)])
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        return self.head(self.blocks(self.embed(x)).mean((2, 3)))


def convmixer(depth: int = 2, width: int = 16) -> nn.Module:
    return ConvMixer(depth, width)


# ----------------------------------------------------------------------------- gated residual MLP
class GLUBlock(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.gate, self.up = nn.Linear(d, 2 * d, bias=False), nn.Linear(d, 2 * d, bias=False)
        self.down = nn.Linear(2 * d, d, bias=False)

    def forward(self, x):
        h = self.ln(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class GLUResMLP(nn.Module):
    def __init__(self, depth: int, width: int):
        super().__init__()
        self.embed = nn.Linear(64, width)
        self.blocks = nn.Sequential(*[GLUBlock(width) for _ in range(depth)])
        self.norm, self.head = nn.LayerNorm(width), nn.Linear(width, 10)

    def forward(self, x):
        return self.head(self.norm(self.blocks(self.embed(x.flatten(1)))))


def glu_resmlp(depth: int = 2, width: int = 32) -> nn.Module:
    return GLUResMLP(depth, width)


# ----------------------------------------------------------------------------- concatenate-and-project
class CatBlock(nn.Module):
    def __init__(self, c: int):
        super().__init__()
        self.conv, self.proj, self.bn = nn.Conv2d(c, c, 3, padding=1), nn.Conv2d(2 * c, c, 1), nn.BatchNorm2d(c)

    def forward(self, x):
        return F.relu(self.bn(self.proj(torch.cat([x, self.conv(x)], dim=1))))


class DenseCat(nn.Module):
    def __init__(self, depth: int, width: int):
        super().__init__()
        self.stem = nn.Conv2d(1, width, 3, padding=1)
        self.blocks = nn.Sequential(*[CatBlock(width) for _ in range(depth)])
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        return self.head(self.blocks(F.relu(self.stem(x))).mean((2, 3)))


def densecat(depth: int = 2, width: int = 16) -> nn.Module:
    return DenseCat(depth, width)


#: name -> (factory, width used by the plan)
MODELS = {"resnet_gn": (resnet_gn, 16), "preln_mlp": (preln_mlp, 64), "vgg_bn": (vgg_bn, 16),
          "rms_transformer": (rms_transformer, 32), "scaled_resmlp": (scaled_resmlp, 64),
          "convmixer": (convmixer, 16), "glu_resmlp": (glu_resmlp, 32), "densecat": (densecat, 16)}
