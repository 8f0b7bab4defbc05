"""The contract of an architecture family.

A :class:`Family` holds everything that is one family's: which :class:`~amutheory.spec.ArchSpec`
fields it reads and their checks, the torch model it builds, what its depth counts (layers or
blocks), its memory and cost estimates, its laws, its depth measure for transfer and its sweep and
campaign defaults.  Shared machinery (the probe, training, statistics, the CLI) asks the family
object of a spec (``spec.family_object`` or :func:`amutheory.families.get_family`); no code outside
a family's own module compares a family's name with a literal.

A family is the bottom floor: it imports nothing above it, at any level.  Its torch model, its
symbolic theory and its laws live in the layers above (which import ``amutheory.spec``, and so the
families); those layers register them (:mod:`amutheory.families.services`: ``amutheory.measure`` the
models, ``amutheory.symbolic`` the derivations, ``amutheory.laws`` the laws) and a family's method looks
them up.  This module imports neither torch nor SymPy at load, so that ``amutheory.spec`` (which asks the
family to check a spec) stays light.

Adding a family: ARCHITECTURE.md, "Adding a family".
"""

from __future__ import annotations

from amutheory.families.services import is_provided, provided

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
    #: the module that builds its torch model, and the symbolic package of its theory (a family that
    #: names one has a derived law, registered by the symbolic layer: :meth:`derive`)
    model_module: str = ""
    theory_module: str = ""
    #: the campaign module that analyses one config of this family (``analyse_campaign_config``,
    #: ``campaign_message``); the report groups configs by it
    campaign_module: str = ""
    #: whether the campaign measures the forward stream's variance per block (``stream.csv``) and a
    #: net whose stream is unstable has no depth law (:meth:`forward_stable`)
    measures_stream: bool = False
    #: whether the campaign draws the per-config figures (eta*, per-layer profiles) for it
    campaign_figures: bool = True
    #: whether its nets are plain chains of bias-free layers, each layer's weights iid ``N(0, c / fan_in)`` (the
    #: size-biased probe redraws them: :mod:`amutheory.measure.size_biased`)
    plain_chain: bool = False

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

    def sequence_layout(self, spec, channels: int, positions: int) -> dict:
        """Spec fields for a dataset of sequences, ``channels`` features at each of ``positions`` tokens
        (``(N, channels, positions)``, e.g. ``digits-positions``): a 1-D model reads the tokens as its
        positions, a model of feature vectors (``data_dim`` 0) ``channels * positions`` features; a 2-D
        model reads images, not sequences (``ValueError``)."""
        d = self.data_dim(spec)
        if d == 1:
            return {"input_channels": channels, "spatial": positions}
        if d == 0:
            return {"input_channels": channels * positions, "spatial": 1}
        raise ValueError(f"a {d}-D {self.title} reads images, not sequences of tokens; use a 1-D model (dim 1)")

    def forward_stable(self, spec) -> bool:
        """Whether ``spec``'s forward pass keeps a finite signal as depth grows (a chain always does)."""
        return True

    # ------------------------------------------------------------------ model
    def build_model(self, spec, generator=None, dtype=None, device="cpu", norm: str = "none", dropout: float = 0.0):
        """The torch model of ``spec`` (weights drawn from ``generator``): the builder registered for this
        family (``provide("model", ...)``; ``amutheory.measure`` registers the built-in families').  A
        family from outside the package may override this method instead."""
        self.check_training_options(spec, norm, dropout)
        return self.provided("model")(spec, generator=generator, dtype=dtype, device=device, norm=norm,
                                      dropout=dropout)

    def build_seeded(self, spec, seed: int, dtype=None, device="cpu", norm: str = "none", dropout: float = 0.0):
        """The model of ``spec`` initialised from ``seed`` (a fresh CPU generator), as a training run builds it."""
        import torch

        generator = torch.Generator().manual_seed(int(seed))
        return self.build_model(spec, generator=generator, dtype=dtype, device=device, norm=norm, dropout=dropout)

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
    def depth_report(self, net, input_shape=None):
        """The traced graph's depth measures (:func:`amutheory.graph.effective_depth`) of ``net``, a
        spec of this family (its model built from seed 0, traced on :meth:`input_shape`).  The graph
        package is a floor below (it traces any ``nn.Module`` and imports nothing of amutheory)."""
        from amutheory.graph import effective_depth

        return effective_depth(self.build_seeded(net, 0), self.input_shape(net) if input_shape is None
                               else tuple(input_shape))

    def hidden_fan_in(self, spec) -> float:
        """Fan-in of a hidden layer (the width rules' ``n``)."""
        return float(spec.width)

    def branch_multiplier(self, spec) -> float:
        """The multiplier ``alpha`` of the residual branches (1 for a chain)."""
        return 1.0

    def infinite_width_spread(self, spec) -> dict | None:
        """The seed spread of ``ln s_bar`` at infinite width where it is derived (``measure --spread`` prints it),
        ``None`` where it is not: the ``infinite_width_spread`` service a layer above registered
        (``amutheory.symbolic`` registers the built-in families': the linear MLP's)."""
        return self.provided("infinite_width_spread")(spec)

    def am_mup_depth_factor(self, reference, target, notes: list):
        """The ``am-mup`` transfer rule's depth factor ``lr_t / lr_r`` between two specs of this family
        (:mod:`amutheory.transfer`), or ``None`` when the family has no derived law for them (the rule
        then uses the chain law in the effective depth).  A family whose nets are conv chains
        (:meth:`chain_spec`: the chain itself, an MLP) takes the derived chain law with MLP-limit
        constants, finite-depth corrections included; the others the derived law's leading power."""
        chain_r, chain_t = self.chain_spec(reference), self.chain_spec(target)
        if chain_r is not None and chain_t is not None:
            return chain_law_depth_factor(chain_r, chain_t, notes)
        try:
            law_r, law_t = self.derive(reference), self.derive(target)
        except ValueError as exc:
            notes.append(f"am-mup: no derived law ({' '.join(str(exc).split())[:120]}...); "
                         "used the chain law in the effective depth")
            return None
        if law_r.name != law_t.name:
            notes.append("am-mup: reference and target follow different derived laws; used the chain law in "
                         "the effective depth")
            return None
        notes.append(f"am-mup: derived law {law_r.name}, eta* ~ K^({law_r.exponent}) (leading order; "
                     "its constants are not derived, so no finite-depth correction)")
        return float((target.depth / reference.depth) ** float(law_r.exponent))

    # ------------------------------------------------------------------ laws
    def laws(self) -> list:
        """The registered laws of this family, most exact first (:func:`amutheory.laws.laws_of`, found by
        registration: ``amutheory.laws`` registers it)."""
        return self.provided("laws")(self.name)

    def derive(self, spec, finite_width: bool = False, law: str = "coherent"):
        """The symbolic depth law of ``spec`` (:func:`amutheory.api.derive`): the derivation registered
        for this family (``provide("derive", ...)``; ``amutheory.symbolic`` registers the built-in
        families').  ``ValueError`` for a family without a theory (no :attr:`theory_module` and none
        registered)."""
        if self.theory_module or is_provided("derive", self):
            return self.provided("derive")(spec, finite_width=finite_width, law=law)
        raise ValueError(f"family: no derived law for the {self.title} family")

    def chain_spec(self, spec):
        """The conv chain that ``spec`` is (so that the chain's laws and transfer rule apply to it as
        derived), or ``None`` where it is not one."""
        return None

    # ------------------------------------------------------------------ sweep and campaign defaults
    def sweep_defaults(self) -> dict:
        """ArchSpec fields a sweep on synthetic data starts from when the command line leaves them out
        (a dataset sets them from its images)."""
        return {"spatial": 8, "input_channels": 3, "outputs": 10}

    def net_label(self, spec: dict) -> str:
        """How a report names a net of this family from its stored spec (``ArchSpec.to_dict()``)."""
        return f"{spec['family']} net ({spec.get('activation')})"

    def describe(self) -> dict:
        return {"name": self.name, "title": self.title, "summary": self.summary,
                "depth_counts": "blocks K" if self.counts_blocks else "layers L",
                "unused_fields": list(self.unused_fields), "laws": [law.name for law in self.laws()]}

    def __repr__(self) -> str:
        return f"<family {self.name}>"

    def provided(self, service: str):
        """The implementation of ``service`` that a layer above registered for this family
        (:func:`amutheory.families.services.provided`; :class:`~amutheory.families.services.NotProvided`
        naming the package to import when none did)."""
        return provided(service, self)

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

def chain_law_depth_factor(chain_r, chain_t, notes: list) -> float:
    """``sqrt(s_bar(L_r) / s_bar(L_t))`` of the derived conv-chain law with MLP-limit constants
    (:func:`amutheory.laws.chain_values.chain_depth_factor`, registered by ``amutheory.laws``)."""
    return provided("chain_depth_factor", chain_r.family)(chain_r, chain_t, notes)
