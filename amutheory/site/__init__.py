"""``amutheory docs``: a static site that opens offline (no network, no JavaScript).

:func:`amutheory.site.build.build_site` orchestrates: the course (:mod:`.course` runs each
derivation script cell by cell, :mod:`._exec` is the child process), the markdown pages
(:mod:`.markdown`), the index (:mod:`.index`: the README's own pitch and verdict table, "Start
here", every page with one line), the CLI and API reference (:mod:`.reference`); equations become
MathML at build time (:mod:`.math`).  Nothing is imported here, so ``python -m amutheory.site._exec`` runs clean.
"""
