"""A model a practitioner might write for scikit-learn's 8x8 digits: a pre-LN residual MLP in plain
PyTorch with PyTorch's default inits; the factory takes ``depth`` and ``width`` as ``amutheory sweep
--model`` and ``amutheory tune --model`` call it.  Used by ``validate/plans/TUNE_BENCHMARK.md``."""

from torch import nn


class Block(nn.Module):
    """``x + W2 relu(W1 LayerNorm(x))``, hidden width 2 x width."""

    def __init__(self, width: int):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 2 * width)
        self.down = nn.Linear(2 * width, width)

    def forward(self, x):
        return x + self.down(self.up(self.norm(x)).relu())


class ResMLP(nn.Module):
    def __init__(self, depth: int, width: int):
        super().__init__()
        self.embed = nn.Linear(64, width)
        self.blocks = nn.Sequential(*[Block(width) for _ in range(depth)])
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        return self.head(self.norm(self.blocks(self.embed(x.flatten(1)))))


def resmlp(depth: int = 2, width: int = 32) -> nn.Module:
    """``depth`` pre-LN residual MLP blocks of ``width`` units on the flattened 64 pixels."""
    return ResMLP(depth, width)
