"""The child process of :mod:`amutheory.site.course`: run one script's code cells in one namespace,
capture each cell's printed output and the matplotlib figures it leaves open, and append one JSON
line per cell to the result file (so a timeout keeps the cells that finished).

``python -m amutheory.site._exec SCRIPT CELLS.json RESULT.jsonl FIGURE_DIR PREFIX``
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import traceback


def _figures(fig_dir: str, prefix: str, cell: int) -> list[str]:
    if "matplotlib.pyplot" not in sys.modules:
        return []
    plt = sys.modules["matplotlib.pyplot"]
    names = []
    for k, num in enumerate(plt.get_fignums()):
        name = f"{prefix}-cell{cell:02d}-fig{k}.png"
        fig = plt.figure(num)
        fig.savefig(os.path.join(fig_dir, name), format="png", dpi=90, bbox_inches="tight")
        plt.close(fig)
        names.append(name)
    return names


def main(argv: list[str]) -> int:
    script, cells_file, result_file, fig_dir, prefix = argv
    with open(cells_file) as fh:
        cells = json.load(fh)
    sys.argv = [script]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    namespace = {"__name__": "__main__", "__file__": os.path.abspath(script), "__builtins__": __builtins__}
    status = 0
    with open(result_file, "w") as result:
        for i, source in enumerate(cells):
            out, err = io.StringIO(), io.StringIO()
            error = None
            try:
                code = compile(source, f"{script} (cell {i + 1})", "exec")
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    exec(code, namespace)
            except SystemExit as exc:
                if exc.code not in (None, 0):
                    error = f"SystemExit: {exc.code}"
            except BaseException:  # noqa: BLE001 - the page shows whatever the script raised
                error = traceback.format_exc()
            try:
                figures = _figures(fig_dir, prefix, i)
            except Exception:  # noqa: BLE001
                figures, error = [], error or traceback.format_exc()
            result.write(json.dumps({"cell": i, "stdout": out.getvalue(), "stderr": err.getvalue(),
                                     "figures": figures, "error": error}) + "\n")
            result.flush()
            if error is not None:
                status = 1
                break
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
