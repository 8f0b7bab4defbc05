"""The probe of a user's module on CUDA against the CPU (run by validate/gpu/device_check_2.sh on a device).

Prints, per model, the largest relative difference of s_l between the devices at each depth: a factory
building the built-in conv chain and Transformer (the ``transformer`` layers preset), and a token model
of nn.TransformerEncoderLayer blocks (dropout in the model: the probe turns it off)."""

import time

import numpy as np
import torch
from torch import nn

import amutheory
from amutheory import ArchSpec, ProbeProtocol
from amutheory.measure.module_probe import builtin_factory


class Tokens(nn.Module):
    def __init__(self, depth, width):
        super().__init__()
        self.embed = nn.Embedding(32, width)
        self.blocks = nn.ModuleList(nn.TransformerEncoderLayer(width, 2, 4 * width, dropout=0.1, batch_first=True,
                                                               norm_first=True) for _ in range(depth))
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        x = self.embed(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x.mean(1))


def main():
    print("torch", torch.__version__, "cuda", torch.cuda.is_available())
    for family, layers in (("conv", None), ("transformer", "transformer")):
        spec = ArchSpec(family=family, depth=2, width=16, spatial=8, batch=4)
        t = time.time()
        cpu = amutheory.measure(builtin_factory(spec), [2, 4], 8, input_shape=(4, 3, 8), width=16, layers=layers)
        gpu = amutheory.measure(builtin_factory(spec), [2, 4], 8, ProbeProtocol(device="cuda"), input_shape=(4, 3, 8),
                                width=16, layers=layers)
        diff = [float(np.max(np.abs(gpu.profiles[d] / cpu.profiles[d] - 1))) for d in (2, 4)]
        print(f"{family}: max relative difference CUDA vs CPU at depths 2, 4: {diff}; vectorised {gpu.vectorised}; "
              f"{time.time() - t:.1f} s")
    out = {}
    for device in ("cpu", "cuda"):
        out[device] = amutheory.measure(Tokens, [2, 4], 4, ProbeProtocol(device=device), input_shape=(4, 16), width=16,
                                        input_kind="tokens", vocab=32)
    diff = [float(np.max(np.abs(out["cuda"].profiles[d] / out["cpu"].profiles[d] - 1))) for d in (2, 4)]
    print(f"token TransformerEncoderLayer model: max relative difference CUDA vs CPU at depths 2, 4: {diff}; "
          f"layers counted at depth 2: {len(out['cuda'].layers[2])}; vectorised {out['cuda'].vectorised}")


if __name__ == "__main__":
    main()
