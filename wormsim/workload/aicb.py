"""SimAI / AICB workload ``.txt`` files: read them into ops tables, write ops tables as them.

The format, and how a file is executed, are described in :mod:`wormsim.workload.aicb_format`;
reading and the workload model are there, the import into ops tables is
:mod:`wormsim.workload.aicb_import` and the export :mod:`wormsim.workload.aicb_export`. This
module gathers their public names.
"""

from __future__ import annotations

from .aicb_export import AicbExportWarning, ops_to_aicb, ops_to_workload, write_aicb
from .aicb_format import (
    COMM_TYPES,
    FIELDS,
    MAX_DEGREE,
    MAX_FILE_BYTES,
    MAX_VALUE,
    POLICIES,
    AicbFormatError,
    AicbFormatWarning,
    AicbRow,
    AicbWorkload,
    parse_aicb,
    read_aicb,
)
from .aicb_import import aicb_experiment_document, aicb_to_ops, check_aicb_scale

__all__ = [
    "AicbFormatError",
    "AicbExportWarning",
    "AicbFormatWarning",
    "AicbRow",
    "AicbWorkload",
    "read_aicb",
    "parse_aicb",
    "aicb_experiment_document",
    "check_aicb_scale",
    "aicb_to_ops",
    "ops_to_workload",
    "ops_to_aicb",
    "write_aicb",
    "COMM_TYPES",
    "FIELDS",
    "POLICIES",
    "MAX_FILE_BYTES",
    "MAX_VALUE",
    "MAX_DEGREE",
]
