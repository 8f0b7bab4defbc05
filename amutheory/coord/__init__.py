"""The coord check of a user's ``nn.Module`` across depth and width (mup's ``get_coord_data`` /
``plot_coord_data`` idea): records (:mod:`.records`), reading (:mod:`.reading`, :mod:`.expectation`),
figure (:mod:`.figure`), the whole (:mod:`.check`).  Torch is imported only when a check runs."""

from amutheory.coord.check import FILES, coord_check, write_outputs
from amutheory.coord.records import RECORD_KEYS

__all__ = ["FILES", "RECORD_KEYS", "coord_check", "write_outputs"]
