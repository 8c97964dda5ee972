"""Collective stage: the ops table and the cluster layout -> the flow DAG (``dag.parquet``).

Public entry points: :func:`expand_dag`, :class:`CollectiveSpec`, :class:`ClusterLayout`,
:func:`select_algorithm`, :func:`collective_summary`.
"""

from wormsim.collective.config import CollectiveSpec
from wormsim.collective.errors import CollectiveError
from wormsim.collective.expand import expand_dag
from wormsim.collective.layout import ClusterLayout
from wormsim.collective.selector import Choice, NcclModel, select_algorithm
from wormsim.collective.summary import collective_summary

__all__ = [
    "expand_dag",
    "CollectiveSpec",
    "ClusterLayout",
    "CollectiveError",
    "select_algorithm",
    "Choice",
    "NcclModel",
    "collective_summary",
]
