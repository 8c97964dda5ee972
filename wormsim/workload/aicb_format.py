"""SimAI / AICB workload ``.txt`` files: the format, its rows and workload, and the parser.

The format: line 1 is a policy token followed by ``key:
value`` pairs in any order (``model_parallel_NPU_group`` = TP, ``ep``, ``pp``, ``vpp``, ``ga``,
``all_gpus``, ``checkpoints: k ids…``, ``checkpoint_initiates: k ids…``, ``pp_comm``); line 2 is the
number N of layer rows; then N rows of 12 whitespace-separated fields::

    name dep fwd_compute fwd_comm_type fwd_comm_bytes ig_compute ig_comm_type ig_comm_bytes
    wg_compute wg_comm_type wg_comm_bytes wg_update_time

Compute times are SimAI ticks (ns); sizes are bytes.

How a file is executed (our reading of SimAI's ``HYBRID_TRANSFORMER_FWD_IN_BCKWD`` semantics and of
AICB's ``SimAI_training_workload_generator``, checked against the real file in ``tests/data/aicb``):

- **Ranks.** The file is the work of one rank, and every rank runs it. ``DP = all_gpus/(TP·PP)``;
  ranks are in Megatron order (TP fastest, then DP, then PP), ``cp = 1``, and expert layers use
  :class:`~wormsim.workload.parallel.RankLayout` with expert TP = TP (Megatron's default, and AICB
  runs expert all-gathers in the TP group), so EP groups are carved out of DP (``ep`` ranks of equal
  TP index, ``edp = DP/ep``). When ``ep`` does not divide DP (AICB writes TP8-EP8-PP4 on 128
  GPUs, DP 4), the expert layers are *folded* as Megatron-core's MoE parallel folding does
  (expert rank order "etp-ep-dp-pp" over the ranks of a stage, with expert TP 1): an EP group is
  ``ep`` consecutive ranks (with TP 8 and EP 8, one server's TP group) and ``edp = TP·DP/ep``.
  SimAI itself computes ``DP_EP = DP/EP`` in integers (0 there); AICB's own rank generator needs
  ``ep`` to divide DP, so the file only says the degrees and this is the layout that fits them.
- **Row layout.** AICB writes a few iteration-level *head* rows (``grad_norm``, ``layernorm``,
  ``moe_grad_norm1/2``; older versions ``grad_gather``, ``grad_param_comm``, ...), then the
  per-micro-batch *block* (``embedding_layer``, ``attention_layer``/``mlp_layer`` per layer of the
  stage, ``embedding_norm``) repeated ``ga`` times, then *tail* rows (``cross_entropy1..3``,
  ``optimizer1..4``). Head and tail rows are recognised by name (AICB's names and the ``iter_``
  prefix this module writes); the middle must be ``ga`` copies of one name sequence and block *k*
  is micro-batch *k*. A middle that is not (a hand-written file) runs once, as a single
  micro-batch, which is what SimAI's straight top-to-bottom pass does.
- **Per micro-batch.** Forward runs the block top to bottom (fwd compute, then the fwd collective,
  blocking); backward runs it bottom to top (ig compute, ig collective blocking, wg compute, then
  the wg collective *non-blocking*). A block's wg collectives are issued only in the backward of the
  last micro-batch (gradients are reduced once per iteration) and overlap whatever follows; they
  are chained to one another (one stream) and waited for at the end of the iteration.
- **Pipeline.** With ``pp > 1`` each stage runs the micro-batches in 1F1B order
  (:func:`~wormsim.workload.schedule.stage_schedule`); the forward of a micro-batch is preceded by
  a receive of ``pp_comm`` bytes from the previous stage and followed by a send to the next one,
  and the backward mirrors it, as in the native builder.
- **Iteration.** Head rows' forward runs first; then the micro-batches; then the tail rows
  (forward top to bottom, then backward bottom to top, phase ``step``); then the head rows'
  backward bottom to top (phase ``bwd``), so ``grad_norm``'s wg reduce-scatter of the gradients is
  the last collective issued.
- **Groups.** fwd and ig collectives run in TP (``tp``), wg collectives in DP (``dp``); the suffix
  ``_EP`` selects ``ep`` and ``_DP_EP`` selects ``edp`` in any column. ``ALLREDUCEALLTOALL`` is an
  all-reduce. Sizes are used as written (the all-gather / reduce-scatter size is the full buffer).
  Collectives of 0 bytes or on a group of one rank, and compute of 0 ns, are dropped. This follows
  SimAI even where AICB's intent differs (AICB puts the DP parameter all-gather of ``grad_norm`` and
  the embedding-gradient all-reduce of ``embedding_norm`` in the fwd column, so they run in TP).
- **Ignored fields.** ``dep``, ``wg_update_time``, ``vpp`` (the block itself gives the layers) and
  the checkpoint lists (activation recomputation is not modelled).

Export (:func:`~wormsim.workload.aicb_export.ops_to_aicb`) writes one representative rank's
schedule in this layout: DP/EDP collectives (gradient buckets, parameter gathers, ZeRO-3 traffic)
become ``iter_*`` head rows with a wg collective, other iteration-level collectives head rows with
an ig collective, iteration-level compute ``iter_*`` tail rows, and each micro-batch one block
whose rows pair each forward collective with a backward one of the same layer. Point-to-point
transfers become ``pp_comm``. Expert-TP (``etp``) collectives are written as TP ones when
``etp == tp`` (the same communicators, and what AICB does). Collectives with no AICB group (``pp``
such as the tied-embedding all-reduce, ``cp``, ``etp`` when ``etp != tp``) and CP ring transfers
cannot be written; they are dropped with an
:class:`~wormsim.workload.aicb_export.AicbExportWarning`.

This module holds the format: the rows, the workload and the parser. Import
(:mod:`wormsim.workload.aicb_import`) and export (:mod:`wormsim.workload.aicb_export`) are beside
it, and :mod:`wormsim.workload.aicb` gathers all three.
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wormsim.inputs import read_text

from .errors import WorkloadError
from .parallel import RankLayout

__all__ = [
    "AicbFormatError",
    "AicbFormatWarning",
    "AicbRow",
    "AicbWorkload",
    "read_aicb",
    "parse_aicb",
    "COMM_TYPES",
    "FIELDS",
    "POLICIES",
    "MAX_FILE_BYTES",
    "MAX_VALUE",
    "MAX_DEGREE",
]

#: Base communication types of the format (each may carry the suffix ``_EP`` or ``_DP_EP``).
COMM_TYPES = ("NONE", "ALLREDUCE", "ALLGATHER", "REDUCESCATTER", "ALLTOALL", "ALLREDUCEALLTOALL")
_COLLECTIVE = {
    "ALLREDUCE": "allreduce",
    "ALLGATHER": "allgather",
    "REDUCESCATTER": "reducescatter",
    "ALLTOALL": "alltoall",
    "ALLREDUCEALLTOALL": "allreduce",
}
_SUFFIXES = {"_DP_EP": "edp", "_EP": "ep"}  # longest first
POLICIES = ("HYBRID_TRANSFORMER_FWD_IN_BCKWD", "HYBRID_TRANSFORMER")
_INT_KEYS = {
    "model_parallel_NPU_group": "tp",
    "ep": "ep",
    "pp": "pp",
    "vpp": "vpp",
    "ga": "ga",
    "all_gpus": "all_gpus",
    "pp_comm": "pp_comm",
}
_REQUIRED = ("model_parallel_NPU_group", "pp", "ga", "all_gpus")
_LIST_KEYS = ("checkpoints", "checkpoint_initiates")
#: Largest AICB file read (256 MiB).
MAX_FILE_BYTES = 256 << 20
FIELDS = (
    "name",
    "dep",
    "fwd_compute",
    "fwd_comm_type",
    "fwd_comm_bytes",
    "ig_compute",
    "ig_comm_type",
    "ig_comm_bytes",
    "wg_compute",
    "wg_comm_type",
    "wg_comm_bytes",
    "wg_update_time",
)
_HEAD_RE = re.compile(
    r"^(grad_norm\w*|grad_gather\w*|grad_param_\w+|layernorm\w*|moe_grad_norm\w*|iter_\w+)$"
)
_TAIL_RE = re.compile(r"^(cross_entropy\w*|optimizer\w*|iter_\w+)$")
_DEFAULT_UPDATE_TIME = 100
#: Largest value of any field: a byte count of 1 PiB, a time of about 53 days in ns.
MAX_VALUE = 1 << 50
#: Largest parallel degree or GPU count in the header.
MAX_DEGREE = 1 << 20
_DEGREE_KEYS = ("model_parallel_NPU_group", "ep", "pp", "vpp", "ga", "all_gpus")


class AicbFormatError(WorkloadError):
    """An AICB file is malformed; the message names the file, the line, the field and the fix.

    ``line`` and ``detail`` keep the parts, so :func:`parse_aicb` can name the file.
    """

    def __init__(self, message: str, line: int = 0, detail: str = "") -> None:
        super().__init__(message)
        self.line = line
        self.detail = detail or message


class AicbFormatWarning(UserWarning):
    """An AICB file is legal but suspicious (SimAI warns about the same things)."""


def _err(line: int, what: str) -> AicbFormatError:
    return AicbFormatError(f"AICB workload line {line}: {what}", line, what)


@dataclass(frozen=True)
class AicbRow:
    """One layer row (12 fields). Times in ns, sizes in bytes; ``line`` is the 1-based line."""

    name: str
    dep: int = -1
    fwd_compute: int = 0
    fwd_comm_type: str = "NONE"
    fwd_comm_bytes: int = 0
    ig_compute: int = 0
    ig_comm_type: str = "NONE"
    ig_comm_bytes: int = 0
    wg_compute: int = 0
    wg_comm_type: str = "NONE"
    wg_comm_bytes: int = 0
    wg_update_time: int = _DEFAULT_UPDATE_TIME
    line: int = field(default=0, compare=False)

    def comm(self, column: str) -> tuple[str, str, int] | None:
        """``(collective, group, bytes)`` of column ``fwd``, ``ig`` or ``wg``; None if NONE.

        The group is the column's default (``tp`` for fwd/ig, ``dp`` for wg) unless the type
        carries ``_EP`` (``ep``) or ``_DP_EP`` (``edp``).
        """
        ctype = getattr(self, f"{column}_comm_type")
        size = getattr(self, f"{column}_comm_bytes")
        base, group = _split_type(ctype)
        if base == "NONE":
            return None
        if group is None:
            group = "dp" if column == "wg" else "tp"
        return _COLLECTIVE[base], group, size

    def to_line(self) -> str:
        """The row as AICB writes it (tab-separated)."""
        return "\t".join(str(getattr(self, f)) for f in FIELDS)


def _split_type(ctype: str) -> tuple[str, str | None]:
    for suffix, group in _SUFFIXES.items():
        if ctype.endswith(suffix):
            return ctype[: -len(suffix)], group
    return ctype, None


@dataclass(frozen=True)
class AicbWorkload:
    """A parsed AICB workload: the header values and the layer rows.

    Attributes
    ----------
    policy : str
        Parallelism policy token (``HYBRID_TRANSFORMER_FWD_IN_BCKWD``).
    tp, ep, pp, vpp, ga, all_gpus, pp_comm : int
        Header values (``model_parallel_NPU_group`` is ``tp``).
    rows : tuple of AicbRow
        The N layer rows in file order.
    checkpoints, checkpoint_initiates : tuple of int
        Layer ids of the checkpoint lists.
    extra : dict
        Other ``key: value`` header pairs, kept for writing back.
    """

    tp: int
    pp: int
    ga: int
    all_gpus: int
    rows: tuple[AicbRow, ...]
    ep: int = 1
    vpp: int = 1
    pp_comm: int = 0
    policy: str = "HYBRID_TRANSFORMER_FWD_IN_BCKWD"
    checkpoints: tuple[int, ...] = ()
    checkpoint_initiates: tuple[int, ...] = ()
    extra: dict[str, int] = field(default_factory=dict)

    @property
    def dp(self) -> int:
        """Data-parallel degree ``all_gpus / (tp·pp)``."""
        return self.all_gpus // (self.tp * self.pp)

    @property
    def etp(self) -> int:
        """Expert tensor-parallel degree: TP when ``ep`` divides DP, else 1 (parallel folding)."""
        return self.tp if self.dp % self.ep == 0 else 1

    @property
    def layout(self) -> RankLayout:
        """Megatron rank layout: ``cp = 1``, expert TP = :attr:`etp`."""
        return RankLayout(tp=self.tp, cp=1, dp=self.dp, pp=self.pp, ep=self.ep, etp=self.etp)

    def sections(self) -> tuple[list[AicbRow], list[list[AicbRow]], list[AicbRow]]:
        """Split the rows into head rows, per-micro-batch blocks and tail rows.

        Returns
        -------
        head, blocks, tail
            ``blocks[k]`` is micro-batch ``k``: ``ga`` blocks when the middle rows are ``ga``
            copies of one name sequence, otherwise one block holding all of them.
        """
        rows = list(self.rows)
        i = 0
        while i < len(rows) and _HEAD_RE.match(rows[i].name):
            i += 1
        j = len(rows)
        while j > i and _TAIL_RE.match(rows[j - 1].name):
            j -= 1
        head, middle, tail = rows[:i], rows[i:j], rows[j:]
        if not middle:
            return head, [], tail
        names = [r.name for r in middle]
        n = len(middle)
        if n % self.ga == 0:
            size = n // self.ga
            if names == names[:size] * self.ga:
                return head, [middle[k * size : (k + 1) * size] for k in range(self.ga)], tail
        return head, [middle], tail

    def header(self) -> str:
        """Line 1 of the file."""
        parts = [
            self.policy,
            "model_parallel_NPU_group:",
            str(self.tp),
            "ep:",
            str(self.ep),
            "pp:",
            str(self.pp),
            "vpp:",
            str(self.vpp),
            "ga:",
            str(self.ga),
            "all_gpus:",
            str(self.all_gpus),
        ]
        for key in _LIST_KEYS:
            ids = getattr(self, key)
            parts += [f"{key}:", str(len(ids)), *map(str, ids)]
        for key, value in self.extra.items():
            parts += [f"{key}:", str(value)]
        parts += ["pp_comm:", str(self.pp_comm)]
        return " ".join(parts)

    def to_text(self) -> str:
        """The whole file, as AICB writes it."""
        lines = [self.header(), str(len(self.rows)), *(r.to_line() for r in self.rows)]
        return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# Reading


def _int(
    tok: str,
    line: int,
    what: str,
    hint: str,
    minimum: int | None = 0,
    maximum: int = MAX_VALUE,
) -> int:
    """An integer field; integral floats (``2621440.0``, as AICB writes some) are accepted."""
    try:
        value = int(tok)
    except ValueError:
        try:
            x = float(tok)
        except ValueError:
            raise _err(line, f"{what} is {tok!r}, not an integer; {hint}") from None
        if not (math.isfinite(x) and x == int(x)):
            raise _err(line, f"{what} is {tok!r}, not a whole number; {hint}") from None
        value = int(x)
    if minimum is not None and value < minimum:
        raise _err(line, f"{what} is {value}, it must be >= {minimum}; {hint}")
    if value > maximum:
        raise _err(line, f"{what} is {value}, over the limit of {maximum}; {hint}")
    return value


def _parse_header(text: str) -> dict[str, Any]:
    toks = text.split()
    if not toks:
        raise _err(
            1,
            "the header is empty; it must start with a policy token such as "
            "HYBRID_TRANSFORMER_FWD_IN_BCKWD followed by 'key: value' pairs",
        )
    policy = toks[0]
    if policy not in POLICIES:
        raise _err(
            1,
            f"policy {policy!r} is not supported; use one of {', '.join(POLICIES)} "
            "(AICB's training workloads)",
        )
    out: dict[str, Any] = {"policy": policy, "extra": {}}
    seen: set[str] = set()
    i = 1
    while i < len(toks):
        key = toks[i]
        if not key.endswith(":"):
            raise _err(
                1,
                f"expected a 'key:' token at header token {i + 1}, got {key!r}; "
                "write keys as 'name:' followed by the value",
            )
        name = key[:-1]
        if name in seen:
            raise _err(1, f"header key {key!r} appears twice; keep one")
        seen.add(name)
        if i + 1 >= len(toks):
            raise _err(1, f"header key {key!r} has no value; add an integer after it")
        if name in _LIST_KEYS:
            hint = f"'{key} k id1 … idk' lists k layer ids"
            k = _int(toks[i + 1], 1, f"header {key} count", hint, maximum=len(toks))
            ids = toks[i + 2 : i + 2 + k]
            if len(ids) < k:
                raise _err(
                    1, f"header {key} announces {k} layer ids but only {len(ids)} follow; {hint}"
                )
            out[name] = tuple(_int(t, 1, f"header {key} layer id", hint) for t in ids)
            i += 2 + k
            continue
        hint = f"'{key}' takes a non-negative integer"
        top = MAX_DEGREE if name in _DEGREE_KEYS else MAX_VALUE
        value = _int(toks[i + 1], 1, f"header {key}", hint, maximum=top)
        if name in _INT_KEYS:
            out[_INT_KEYS[name]] = value
        else:
            out["extra"][name] = value
        i += 2
    for key in _REQUIRED:
        if key not in seen:
            raise _err(
                1,
                f"header key '{key}:' is missing; AICB writes "
                f"'{POLICIES[0]} model_parallel_NPU_group: <TP> ep: <EP> pp: <PP> "
                "vpp: <VPP> ga: <GA> all_gpus: <N> ... pp_comm: <bytes>'",
            )
    for attr, key in (
        ("tp", "model_parallel_NPU_group"),
        ("pp", "pp"),
        ("ga", "ga"),
        ("all_gpus", "all_gpus"),
        ("ep", "ep"),
    ):
        if attr in out and out[attr] < 1:
            raise _err(1, f"header {key}: is {out[attr]}; it must be at least 1")
    tp, pp, n = out["tp"], out["pp"], out["all_gpus"]
    if n % (tp * pp):
        raise _err(
            1,
            f"all_gpus ({n}) is not divisible by model_parallel_NPU_group * pp = "
            f"{tp * pp}; DP = all_gpus/(TP*PP) must be whole, fix the header",
        )
    ep = out.get("ep", 1)
    if (n // pp) % ep:
        raise _err(
            1,
            f"ep ({ep}) must divide TP*DP = all_gpus/PP = {n // pp}, the ranks of a pipeline "
            "stage (expert groups are carved out of them)",
        )
    if pp > 1 and out.get("pp_comm", 0) == 0:
        warnings.warn(
            f"AICB workload line 1: pp is {pp} but 'pp_comm:' is missing or 0, so "
            "the stages exchange nothing (as in SimAI); give the bytes of one pipeline "
            "send (AICB writes 2*micro_batch*seq*hidden)",
            AicbFormatWarning,
            stacklevel=3,
        )
    return out


def _parse_row(text: str, line: int) -> AicbRow:
    toks = text.split()
    if len(toks) != len(FIELDS):
        raise _err(
            line, f"a layer row has {len(toks)} fields but needs {len(FIELDS)}: {' '.join(FIELDS)}"
        )
    vals: dict[str, Any] = {"name": toks[0], "line": line}
    for fname, tok in zip(FIELDS[1:], toks[1:], strict=True):
        if fname.endswith("_type"):
            base, _ = _split_type(tok)
            if base not in COMM_TYPES:
                raise _err(
                    line,
                    f"field {fname} is {tok!r}, an unknown comm type; use one of "
                    f"{', '.join(COMM_TYPES)}, optionally with the suffix _EP or "
                    "_DP_EP",
                )
            vals[fname] = tok
        elif fname == "dep":
            vals[fname] = _int(
                tok, line, f"field {fname}", "dep is a layer index or -1", minimum=None
            )
        else:
            unit = "bytes" if fname.endswith("_bytes") else "ns (SimAI ticks)"
            vals[fname] = _int(
                tok, line, f"field {fname}", f"it must be a non-negative whole number of {unit}"
            )
    return AicbRow(**vals)


def parse_aicb(text: str, source: str = "AICB workload") -> AicbWorkload:
    """Parse the text of an AICB workload file.

    Raises
    ------
    AicbFormatError
        ``source:line: …`` naming the field, what is wrong and how to fix it.
    """
    try:
        return _parse(text)
    except AicbFormatError as exc:
        raise AicbFormatError(f"{source}:{exc.line}: {exc.detail}", exc.line, exc.detail) from None


def _parse(text: str) -> AicbWorkload:
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        raise _err(
            1,
            "the file is empty; line 1 must be the header "
            f"({POLICIES[0]} model_parallel_NPU_group: …)",
        )
    head = _parse_header(lines[0])
    if len(lines) < 2 or not lines[1].strip():
        raise _err(2, "line 2 must hold the number of layer rows")
    n = _int(lines[1].strip(), 2, "the row count", "line 2 holds the number of layer rows")
    rows = [_parse_row(t, k + 3) for k, t in enumerate(lines[2:]) if t.strip()]
    if len(rows) != n:
        raise _err(
            2,
            f"the row count says {n} layer rows but the file has {len(rows)}; "
            "make line 2 equal the number of rows that follow",
        )
    return AicbWorkload(rows=tuple(rows), **head)


def read_aicb(path: str | Path) -> AicbWorkload:
    """Read and validate an AICB workload ``.txt`` file (see :func:`parse_aicb`).

    Raises
    ------
    AicbFormatError
        A missing, oversized or non-UTF-8 file, or a malformed one (naming file and line).
    """
    text = read_text(path, "AICB workload", AicbFormatError, max_bytes=MAX_FILE_BYTES)
    return parse_aicb(text, str(path))
