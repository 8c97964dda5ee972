"""A rich progress bar on simulated time for long engine runs."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

__all__ = ["engine_progress"]


@contextmanager
def engine_progress(
    total_nodes: int, label: str = "simulating", enabled: bool | None = None
) -> Iterator[Callable[[int, int], None] | None]:
    """Yield a ``progress(sim_time_ps, nodes_done)`` callback that drives a progress bar.

    The bar counts finished DAG nodes and shows the simulated time reached. It is off when stderr
    is not a terminal (``enabled=None``), so logs and CI stay clean.
    """
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield None
        return
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:,}/{task.total:,} nodes"),
        TextColumn("sim {task.fields[sim]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, transient=True) as bar:
        task = bar.add_task(label, total=total_nodes, sim="0 s")

        def update(sim_ps: int, done: int) -> None:
            bar.update(task, completed=done, sim=f"{sim_ps / 1e12:.6f} s")

        yield update
