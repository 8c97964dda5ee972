"""The experiment's ``workload`` section: a workload file simulated instead of the model's.

.. code-block:: yaml

    workload: {file: gpt7b-64.txt, format: aicb, compute: model}

``file`` is an AICB/SimAI ``.txt`` or the prefix of Chakra traces ``PREFIX.<rank>.et``
(relative to the experiment file). The file defines the ops; the experiment's ``parallel``
section follows the file. ``compute`` says where compute times come from: ``file`` (the times
the file holds) or ``model`` (the roofline of the experiment's ``model`` and ``hardware``, as
the native workload stage computes it; for AICB files made without compute profiling, whose
times are placeholders, :mod:`wormsim.workload.aicb_compute`). ``placeholder`` records that the
file's own compute times are AICB's placeholders.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["WorkloadSource", "PLACEHOLDER_WARNING", "compute_origin"]


class WorkloadSource(BaseModel):
    """A workload file and where its compute times come from (module docstring)."""

    model_config = ConfigDict(extra="forbid")

    file: str = Field(
        min_length=1, description="AICB .txt or Chakra trace prefix (relative to this file)."
    )
    format: Literal["aicb", "chakra"] = Field("aicb", description="aicb or chakra.")
    compute: Literal["file", "model"] = Field(
        "file",
        description="file: the file's compute times; model: the roofline of model and hardware.",
    )
    placeholder: bool = Field(
        False, description="The file's compute times are AICB placeholders (not profiled)."
    )


#: The warning for an AICB file whose compute times are placeholders, left as they are.
PLACEHOLDER_WARNING = (
    "WARNING: the AICB workload {file} has no compute profile: its compute times are AICB's "
    "placeholder (1 ns each; generated without --aiob_enable), so this iteration has almost no "
    "compute. Fill compute from a model and hardware: --set model=<preset or shape> "
    "[--set hardware.gpu=H100], or give an experiment file with --workload."
)


def compute_origin(source: WorkloadSource | None, model: Any, hardware: Any) -> dict[str, Any]:
    """Where a run's compute times come from, for ``summary.json`` and the report.

    Returns
    -------
    dict
        ``source`` (``roofline``, ``file``, ``trace`` or ``placeholder``), ``text`` (one
        sentence), and ``warning`` when the compute is AICB placeholders.
    """
    roof = f"roofline of {model.name} on {hardware.gpu} at {hardware.efficiency:.0%} of peak FLOP/s"
    if hardware.kernel_times_us:
        roof += f" (measured times for {', '.join(sorted(hardware.kernel_times_us))})"
    if source is None:
        return {"source": "roofline", "text": f"compute: {roof}"}
    name = Path(source.file).name
    if source.compute == "model":
        note = " (the file's compute times were AICB placeholders)" if source.placeholder else ""
        return {"source": "roofline", "text": f"compute: {roof}, filled into {name}{note}"}
    if source.placeholder:
        warning = PLACEHOLDER_WARNING.format(file=name)
        return {"source": "placeholder", "text": warning, "warning": warning}
    if source.format == "chakra":
        return {"source": "trace", "text": f"compute: from the Chakra trace {name}"}
    return {"source": "file", "text": f"compute: from the AICB file {name} (profiled)"}
