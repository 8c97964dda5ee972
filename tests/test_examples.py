"""The example notebook runs from top to bottom, so it cannot rot."""

from __future__ import annotations

from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_quickstart_notebook_executes():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(EXAMPLES / "quickstart.ipynb", as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(EXAMPLES)}}
    )
    client.execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    shown = "".join(str(o.get("data", {}).get("text/html", "")) for o in outputs)
    assert "iteration time" in shown  # the run's rich display
    assert "wormsim comparison" in shown  # compare shows as a table
    assert any("image/png" in o.get("data", {}) for o in outputs)  # a figure was drawn
