"""One forward pass watched by hooks: what the layer selection, the residual branches and the probe's memory
estimate each read off a user's module."""

from __future__ import annotations

import torch


def forward_with_hooks(model, x, modules, hook):
    """``model(x)`` once, without gradients, with ``hook`` as a forward hook on each of ``modules``; the hooks
    are removed afterwards whatever happens.  Returns the output."""
    handles = [m.register_forward_hook(hook) for m in modules]
    try:
        with torch.no_grad():
            return model(x)
    finally:
        for h in handles:
            h.remove()
