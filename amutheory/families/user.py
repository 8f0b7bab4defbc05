"""A user's module: the family of a ``--model FILE.py:FACTORY`` run.

Its nets are whatever the factory builds (``FACTORY(depth=L, width=n)`` in a sweep; a module or a
no-argument factory for ``depth`` and ``transfer``), so it has no :class:`~amutheory.spec.ArchSpec`
(``has_spec = False``: ``ArchSpec(family="module")`` is refused), no closed-form law and no probe
sizes; its depth measure is the traced graph (:func:`amutheory.graph.effective_depth`).

The registry holds the family without a factory (:data:`FAMILY`); a run takes
``FAMILY.with_factory("net.py:make")``.  A training cell of such a run keeps its stored form (an
ArchSpec for depth, width and input layout plus the ``model`` string): only the decisions that are
the model's go through this object.
"""

from __future__ import annotations

from amutheory.families.base import Family

#: why the training options of the built-in models are refused for a user's module
NO_TRAINING_LAYERS = "norm and dropout are options of the built-in models; a model factory builds its own layers"


class ModuleFamily(Family):
    name = "module"
    title = "user's module"
    summary = "a torch.nn.Module built by the user's FILE.py:FACTORY; its depth is its traced graph"
    counts_blocks = False
    has_spec = False
    takes_norm = False
    no_norm_because = "a model factory builds its own layers"
    model_module = "amutheory.modelfile"

    def __init__(self, factory: str | None = None):
        if factory is not None and (not isinstance(factory, str) or ":" not in factory):
            raise ValueError(f"model must be FILE.py:FACTORY or MODULE:FACTORY, got {factory!r}")
        self.factory = factory

    def with_factory(self, factory: str) -> "ModuleFamily":
        """This family for the factory ``FILE.py:FACTORY`` (or ``MODULE:FACTORY``)."""
        return ModuleFamily(factory)

    def _need_factory(self) -> str:
        if self.factory is None:
            raise ValueError("model: this module family has no factory (use with_factory('FILE.py:FACTORY'))")
        return self.factory

    # ------------------------------------------------------------------ model
    def load(self, who: str = "model"):
        """The object the factory string names (a module, or a factory to call)."""
        from amutheory.modelfile import import_attribute

        return import_attribute(self._need_factory(), who)

    def load_module(self, who: str = "depth"):
        """The ``nn.Module`` the string names: the module itself or what a no-argument factory returns
        (``ValueError`` of one line otherwise)."""
        from torch import nn

        spec = self._need_factory()
        obj = self.load(who)
        if not isinstance(obj, nn.Module):
            if not callable(obj):
                raise ValueError(f"{who}: {spec!r} is neither an nn.Module nor a factory")
            try:
                obj = obj()
            except Exception as exc:  # noqa: BLE001 - the user's code: one line saying what failed
                raise ValueError(f"{who}: calling {spec.rsplit(':', 1)[-1]}() failed: {type(exc).__name__}: "
                                 f"{' '.join(str(exc).split())}") from None
        if not isinstance(obj, nn.Module):
            raise ValueError(f"{who}: {spec!r} returned {type(obj).__name__}, not a torch.nn.Module")
        return obj

    def build_model(self, spec, generator=None, dtype=None, device="cpu", norm="none", dropout=0.0,
                    who: str = "sweep", seed: int | None = None):
        """``FACTORY(depth=spec.depth, width=spec.width)`` on ``device`` in ``dtype``.  The factory draws
        its weights from torch's global generator: ``seed`` seeds it just before the call (after the
        factory's file is imported)."""
        import torch
        from torch import nn

        self.check_training_options(spec, norm, dropout)
        factory = self.load(who)
        if seed is not None:
            torch.manual_seed(int(seed))
        try:
            net = factory(depth=spec.depth, width=spec.width)
        except Exception as exc:  # noqa: BLE001 - the user's code: one line saying what failed
            raise ValueError(f"{who}: {self.factory}(depth={spec.depth}, width={spec.width}) failed: "
                             f"{type(exc).__name__}: {' '.join(str(exc).split())}") from None
        if not isinstance(net, nn.Module):
            raise ValueError(f"{who}: {self.factory} returned {type(net).__name__}, not a torch.nn.Module")
        return net.to(device=device, dtype=dtype) if dtype is not None else net.to(device=device)

    def build_seeded(self, spec, seed: int, dtype=None, device="cpu", norm="none", dropout=0.0):
        """The factory's net under ``torch.manual_seed(seed)``."""
        return self.build_model(spec, dtype=dtype, device=device, norm=norm, dropout=dropout, seed=seed)

    def check_training_options(self, spec, norm: str, dropout: float) -> None:
        if norm != "none" or dropout:
            raise ValueError(NO_TRAINING_LAYERS)

    def parameter_count(self, spec) -> int:
        """Counted on the built net (``spec`` gives depth and width)."""
        return sum(p.numel() for p in self.build_model(spec).parameters())

    def activation_elements(self, spec) -> int:
        raise ValueError("model: a user's module has no activation estimate (its layers are not known "
                         "before it is built)")

    # ------------------------------------------------------------------ transfer
    def depth_report(self, net, input_shape=None):
        """The traced graph's depth measures of ``net`` (an ``nn.Module``; this family's own net when
        ``None``), run on ``input_shape``."""
        from amutheory.graph import effective_depth

        if input_shape is None:
            raise ValueError("input_shape is required for an nn.Module (e.g. (1, 3, 32, 32))")
        return effective_depth(self.load_module() if net is None else net, tuple(input_shape))

    def hidden_fan_in(self, spec) -> float:
        raise ValueError("model: a user's module's fan-in is read from its layers (amutheory.transfer), "
                         "not from a spec")

    def branch_multiplier(self, net) -> float:
        """The module's own ``alpha`` attribute when it is a real number (1 otherwise)."""
        import numbers

        alpha = getattr(net, "alpha", 1.0)
        return float(alpha) if isinstance(alpha, numbers.Real) else 1.0

    def am_mup_depth_factor(self, reference, target, notes: list):
        return None

    # ------------------------------------------------------------------ laws
    def laws(self) -> list:
        """None: a user's module has no closed-form law."""
        return []

    def derive(self, spec, finite_width: bool = False, law: str = "coherent"):
        raise ValueError("family: a user's module (--model FILE.py:FACTORY) has no closed-form depth law; "
                         "measure its eta* with sweep, or transfer a rate with the effective-depth rules")

    def net_label(self, spec: dict) -> str:
        """The factory (its stored spec only says depth, width and input layout)."""
        return f"user's module {self.factory}"

    def describe(self) -> dict:
        return {**super().describe(), "factory": self.factory}

    def __repr__(self) -> str:
        return f"<family module {self.factory!r}>" if self.factory else "<family module>"


FAMILY = ModuleFamily()
