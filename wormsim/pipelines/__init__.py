"""The orchestrator (:mod:`~wormsim.pipelines.orchestrator`) and its ``pipeline`` command.

The top layer: it chains the stages' run-directory steps. It may import every stage and the
experiment layer; nothing imports it except the top-level ``wormsim`` command (``wormsim.cli``).
"""

__all__: list[str] = []
