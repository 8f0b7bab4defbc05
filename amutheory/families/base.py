"""The contract of an architecture family.

A :class:`Family` holds everything that is one family's: which :class:`~amutheory.spec.ArchSpec`
fields it reads and their checks, the torch model it builds, what its depth counts (layers or
blocks), its memory and cost estimates, its laws, its depth measure for transfer and its sweep and
campaign defaults.  Shared machinery (the probe, training, statistics, the CLI) asks the family
object of a spec (``spec.family_object`` or :func:`amutheory.families.get_family`); no code outside
a family's own module compares a family's name with a literal.

This module imports neither torch nor SymPy: a family imports its model and its theory inside the
methods that need them, so that ``amutheory.spec`` (which asks the family to check a spec) stays light.

Adding a family: ARCHITECTURE.md, "Adding a family".
"""

from __future__ import annotations

#: every ArchSpec field a family may read besides the shared ones (a family lists those it does
#: not read in :attr:`Family.unused_fields`; :meth:`ArchSpec.to_dict` drops them)
SHARED_FIELDS = ("family", "depth", "width", "activation", "init_c", "input_channels", "batch", "outputs",
                 "readout")


class Family:
    """Base of every architecture family.  A subclass sets the class attributes and implements
    :meth:`build_model` and the size methods; the rest have defaults that fit a plain chain."""

    #: the value of ``ArchSpec.family`` (and ``--family``)
    name: str = ""
    #: a few words for reports ("conv chain", "residual net", ...)
    title: str = ""
    #: one line: what the family's nets are
    summary: str = ""
    #: ``True`` when ``spec.depth`` counts blocks ``K`` (reports say K), ``False`` for layers ``L``
    counts_blocks: bool = False
    #: the ArchSpec fields this family does not read (dropped by ``to_dict``; must stay as serialised)
    unused_fields: tuple = ()
    #: whether ``norm`` (batch/layer normalisation before every activation) may be added in training,
    #: and why not where it may not
    takes_norm: bool = True
    no_norm_because: str = ""
    #: whether the one-step probe and the laws run on it (False: a user's module without a spec)
    has_spec: bool = True
    #: relative cost of one block per position and width unit in a training step (the protocol's
    #: scheduler orders groups by it; only the order matters)
    block_cost: float = 1.0
    #: the module that builds its torch model, and the symbolic package of its theory
    model_module: str = ""
    theory_module: str = ""

    # ------------------------------------------------------------------ spec
    def check(self, spec) -> None:
        """Raise ``ValueError`` naming the field when ``spec`` is not a net of this family."""

    def normalise(self, spec) -> dict:
        """Field values this family fixes (fields it does not read, set to the value its laws use);
        ``{}`` for most.  :class:`~amutheory.spec.ArchSpec` applies them before checking."""
        return {}

    def depth_symbol(self) -> str:
        """``K`` for block counts, ``L`` for layers (what reports print)."""
        return "K" if self.counts_blocks else "L"

    def data_dim(self, spec) -> int:
        """The spatial dimension the model reads its inputs in (1: a sequence or a 1-D image)."""
        return spec.dim

    def input_shape(self, spec, batch: int | None = None) -> tuple:
        """The shape of one batch of the model's input."""
        d = self.data_dim(spec)
        return (spec.batch if batch is None else batch, spec.input_channels) + (spec.spatial,) * d

    def data_layout(self, spec, channels: int, side: int) -> dict:
        """Spec fields for a dataset of ``channels x side x side`` images: 1-D models read ``side``
        positions of ``channels * side`` features."""
        one_d = self.data_dim(spec) == 1
        return {"input_channels": channels * side if one_d else channels, "spatial": side}

    # ------------------------------------------------------------------ model
    def build_model(self, spec, generator=None, dtype=None, device="cpu", norm: str = "none", dropout: float = 0.0):
        """The torch model of ``spec`` (weights drawn from ``generator``)."""
        raise NotImplementedError

    def check_training_options(self, spec, norm: str, dropout: float) -> None:
        """Raise ``ValueError`` for training options this family's model does not take."""
        if norm != "none" and not self.takes_norm:
            raise ValueError(f"norm must be 'none' for a {self.name} ({self.no_norm_because}), got {norm!r}")

    # ------------------------------------------------------------------ sizes (memory, cost)
    def parameter_count(self, spec) -> int:
        raise NotImplementedError

    def modules_per_block(self, spec) -> int:
        """Modules of one layer or block (each carries a fixed memory cost in the probe)."""
        return 1

    def activation_elements(self, spec) -> int:
        """Elements one sample's forward pass keeps for its backward pass."""
        raise NotImplementedError

    def probe_layers(self, spec, depth: int) -> int:
        """Pre-activation tensors the probe measures in a net of ``depth``."""
        return int(depth)

    # ------------------------------------------------------------------ transfer
    def hidden_fan_in(self, spec) -> float:
        """Fan-in of a hidden layer (the width rules' ``n``)."""
        return float(spec.width)

    def branch_multiplier(self, spec) -> float:
        """The multiplier ``alpha`` of the residual branches (1 for a chain)."""
        return 1.0

    # ------------------------------------------------------------------ laws
    def laws(self) -> list:
        """The registered laws of this family, most exact first."""
        from amutheory.laws.registry import laws_of

        return laws_of(self.name)

    def derive(self, spec, finite_width: bool = False, law: str = "coherent"):
        """The symbolic depth law of ``spec`` (:func:`amutheory.api.derive`)."""
        raise ValueError(f"family: no derived law for the {self.title} family")

    # ------------------------------------------------------------------ sweep and campaign defaults
    def sweep_defaults(self) -> dict:
        """ArchSpec fields a sweep of this family starts from (the CLI's defaults fill the rest)."""
        return {}

    def describe(self) -> dict:
        return {"name": self.name, "title": self.title, "summary": self.summary,
                "depth_counts": "blocks K" if self.counts_blocks else "layers L",
                "unused_fields": list(self.unused_fields), "laws": [law.name for law in self.laws()]}

    def __repr__(self) -> str:
        return f"<family {self.name}>"

    # ------------------------------------------------------------------ questions the CLI asks
    @property
    def convolutional(self) -> bool:
        """Whether its nets convolve over positions (``padding`` and ``kernel`` mean something:
        ``derive``'s zero-padding boundary and the ``boundary`` command apply)."""
        return "padding" not in self.unused_fields

    @property
    def residual(self) -> bool:
        """Whether its nets are residual blocks on a stream (their depth counts blocks K): the
        residual laws' reports, not the chain's."""
        return self.counts_blocks
