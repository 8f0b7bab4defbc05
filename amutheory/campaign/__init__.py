"""The validation campaign: measure conv chains over depths, calibrate, predict, compare.

``run_campaign(preset, out_dir)`` (behind ``amutheory validate``) measures every config of the
preset, calibrates the derived law on its calibration depths, predicts every depth and compares
with the measured eta* on the held-out ones.  The package, one job a module:

* :mod:`~amutheory.campaign.presets`: :class:`CampaignConfig`, :data:`PRESETS`, :func:`resolve_preset`,
  :class:`WidthSweep`, :data:`WIDTH_SWEEPS`;
* :mod:`~amutheory.campaign.width_sweep`: ``width.csv`` and the width-transfer analysis;
  :mod:`~amutheory.campaign.transfer_table`: the depth-transfer table per rule;
* :mod:`~amutheory.campaign.results`: ``results.csv``, ``stream.csv``, ``campaign.json``
  (measuring, resuming, reading back);
* :mod:`~amutheory.campaign.analysis`: calibrate, predict, compare a config;
  :mod:`~amutheory.campaign.analysis_zero` (zero padding) and
  :mod:`~amutheory.campaign.analysis_resnet` (residual nets) add their own keys;
  :mod:`~amutheory.campaign.bootstrap` and :mod:`~amutheory.campaign.common` hold the shared
  statistics and conventions;
* :mod:`~amutheory.campaign.figures`: the PNG figures (drawn by :mod:`amutheory.plots`);
* :mod:`~amutheory.campaign.report` (with ``report_zero``, ``report_resnet`` and ``formatting``):
  ``report.md``;
* :mod:`~amutheory.campaign.run`: :func:`run_campaign`, :func:`measure_campaign`,
  :func:`analyse_campaign`;
* :mod:`~amutheory.campaign.width_compare`: :func:`compare_widths`, one campaign's configs measured
  at several widths side by side, with the ``n -> oo`` limit of their exponents.

Every public name is importable from ``amutheory.campaign`` itself.
"""

from amutheory.campaign.analysis import analyse_config
from amutheory.campaign.analysis_resnet import PAPER_EXPONENT, analyse_resnet_config
from amutheory.campaign.bootstrap import ratio_bootstrap
from amutheory.campaign.common import C_TARGET, LEVEL, N_BOOT, STATISTICS
from amutheory.campaign.figures import COLLAPSE_FIGURE, RESNET_FIGURE, make_figures
from amutheory.campaign.presets import (PRESETS, STREAM_SEEDS, WIDTH_SWEEPS, CampaignConfig, WidthSweep, n_preacts,
                                        resolve_preset)
from amutheory.campaign.report import write_report
from amutheory.campaign.results import (CSV_COLUMNS, STREAM_COLUMNS, STREAM_FILE, load_measurement, read_results,
                                        read_stream, stream_moments)
from amutheory.campaign.run import analyse_campaign, measure_campaign, run_campaign
from amutheory.campaign.width_compare import compare_widths
from amutheory.campaign.width_sweep import WIDTH_COLUMNS, WIDTH_FILE, analyse_width_sweep, read_width_results

__all__ = [
    "CSV_COLUMNS", "STATISTICS", "LEVEL", "C_TARGET", "N_BOOT", "COLLAPSE_FIGURE", "RESNET_FIGURE", "STREAM_FILE",
    "STREAM_COLUMNS", "STREAM_SEEDS", "PAPER_EXPONENT", "CampaignConfig", "n_preacts", "PRESETS", "resolve_preset",
    "read_results", "load_measurement", "stream_moments", "read_stream", "analyse_config", "analyse_resnet_config",
    "ratio_bootstrap", "make_figures", "write_report", "measure_campaign", "analyse_campaign", "run_campaign",
    "WidthSweep", "WIDTH_SWEEPS", "WIDTH_COLUMNS", "WIDTH_FILE", "analyse_width_sweep", "read_width_results",
    "compare_widths",
]
