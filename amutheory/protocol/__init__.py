"""Does the learning rate transfer?  The papers' experiment under training, registered in advance.

    from amutheory.protocol import run_protocol, PRESETS

* :mod:`~amutheory.protocol.presets`: studies (sweeps), claims, the transfer plan, the presets;
* :mod:`~amutheory.protocol.run`: runs and resumes every study's sweep and the one-step probe;
* :mod:`~amutheory.protocol.zero_shot`: every rule's zero-shot prediction and error, the bridge;
* :mod:`~amutheory.protocol.verdicts`: the registered decision rules;
* :mod:`~amutheory.protocol.analysis`: the summary (the JSON contract);
* :mod:`~amutheory.protocol.report`, :mod:`~amutheory.protocol.figures`: its outputs;
* :mod:`~amutheory.protocol.replicate`: a run against its replicate on disjoint seeds, claim by claim.
"""

from amutheory.protocol.presets import PRESETS, Claim, Protocol, Study, TransferPlan, fingerprint, for_device
from amutheory.protocol.run import run_protocol

__all__ = ["PRESETS", "Claim", "Protocol", "Study", "TransferPlan", "fingerprint", "for_device", "run_protocol"]
