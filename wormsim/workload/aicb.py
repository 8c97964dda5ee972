"""SimAI / AICB workload ``.txt`` files: read them into ops tables, write ops tables as them.

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
  TP index, ``edp = DP/ep``).
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

Export (:func:`ops_to_aicb`) writes one representative rank's schedule in this layout: DP/EDP
collectives (gradient buckets, parameter gathers, ZeRO-3 traffic) become ``iter_*`` head rows with a
wg collective, other iteration-level collectives head rows with an ig collective, iteration-level
compute ``iter_*`` tail rows, and each micro-batch one block whose rows pair each forward
collective with a backward one of the same layer. Point-to-point transfers become ``pp_comm``.
Expert-TP (``etp``) collectives are written as TP ones when ``etp == tp`` (the same communicators,
and what AICB does). Collectives with no AICB group (``pp`` such as the tied-embedding all-reduce,
``cp``, ``etp`` when ``etp != tp``) and CP ring transfers cannot be written; they are dropped with
an :class:`AicbExportWarning`.
"""

from __future__ import annotations

import math
import re
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from wormsim.inputs import MAX_TIME_PS, format_ps, read_text

from .errors import WorkloadError
from .parallel import RankLayout
from .schedule import stage_schedule
from .template import StageTemplate, TemplateOp, expand_stage

__all__ = [
    "AicbFormatError",
    "AicbExportWarning",
    "AicbFormatWarning",
    "AicbRow",
    "AicbWorkload",
    "read_aicb",
    "parse_aicb",
    "import_experiment",
    "check_aicb_scale",
    "aicb_to_ops",
    "ops_to_workload",
    "ops_to_aicb",
    "write_aicb",
    "COMM_TYPES",
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
_AICB_TYPE = {
    "allreduce": "ALLREDUCE",
    "allgather": "ALLGATHER",
    "reducescatter": "REDUCESCATTER",
    "alltoall": "ALLTOALL",
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


class AicbExportWarning(UserWarning):
    """Some ops of an ops table have no AICB equivalent and were left out of the file."""


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
    def layout(self) -> RankLayout:
        """Megatron rank layout: ``cp = 1``, expert TP = TP (so EP is carved from DP)."""
        return RankLayout(tp=self.tp, cp=1, dp=self.dp, pp=self.pp, ep=self.ep, etp=self.tp)

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
    if (n // (tp * pp)) % ep:
        raise _err(
            1,
            f"ep ({ep}) must divide DP = all_gpus/(TP*PP) = {n // (tp * pp)} "
            "(experts are carved out of the data-parallel ranks)",
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


def import_experiment(
    w: AicbWorkload, path: str | Path, overrides: list[str] | None = None, source: str = ""
) -> Any:
    """The experiment an imported workload runs in: ``path``'s cluster, collective, network
    and sim sections, with the model and parallel layout taken from the workload.

    The file defines the ops, so any ``model``/``parallel`` of the experiment is replaced: the
    parallel section by the file's degrees, the model by a placeholder shape consistent with them
    (named after the file; MoE when the file has expert parallelism). ``cluster.gpus`` defaults
    to the file's ``all_gpus``.

    Returns
    -------
    ExperimentConfig

    Raises
    ------
    ConfigError
        A bad experiment, or ``cluster.gpus`` different from the file's ``all_gpus``.
    """
    from wormsim.errors import ConfigError
    from wormsim.pipelines.config import apply_overrides, parse_experiment, read_document

    data = apply_overrides(read_document(Path(path)), overrides or [])
    cluster = data.get("cluster")
    data["cluster"] = dict(cluster) if isinstance(cluster, dict) else {}
    gpus = data["cluster"].setdefault("gpus", w.all_gpus)
    if gpus != w.all_gpus:
        raise ConfigError(
            f"{source or 'the AICB file'} has all_gpus {w.all_gpus} but the experiment's "
            f"cluster.gpus is {gpus}; make them equal (or leave cluster.gpus out)"
        )
    data["model"] = _placeholder_model(w, source or "aicb")
    data["parallel"] = _file_parallel(w)
    return parse_experiment(data)


def _file_parallel(w: AicbWorkload) -> dict[str, Any]:
    moe_sp = w.ep > 1 and w.tp > 1
    return dict(
        tp=w.tp, pp=w.pp, dp=w.dp, ep=w.ep, cp=1, micro_batch=1,
        global_batch=w.dp * w.ga, sequence_parallel=moe_sp,
    )  # fmt: skip


def _placeholder_model(w: AicbWorkload, source: str) -> dict[str, Any]:
    """A model shape the file's layout validates against (the ops come from the file)."""
    _, blocks, _ = w.sections()
    per_stage = max([_block_layers(b)[1] for b in blocks] + [1])
    return dict(
        name=f"aicb:{Path(source).name}"[:200],
        num_layers=w.pp * per_stage,
        hidden_size=128 * w.tp,
        num_heads=w.tp,
        vocab_size=1024,
        seq_length=w.tp,
        num_experts=w.ep if w.ep > 1 else 0,
        moe_top_k=1,
    )


def check_aicb_scale(w: AicbWorkload, source: str = "the AICB workload") -> None:
    """Refuse a workload beyond the op limit or the simulated-time range, before expanding it.

    Raises
    ------
    WorkloadError
        With the count or time, the limit, and the header fields to change.
    """
    from .scale import check_ops_count

    head, blocks, tail = w.sections()
    per_rank = (len(head) + len(tail)) * 6 + sum(len(b) for b in blocks) * 6 + 4 * len(blocks)
    check_ops_count(
        per_rank * w.all_gpus, f"{source} (at most)", "lower all_gpus or ga in the header"
    )
    rows = [*head, *tail, *(r for b in blocks for r in b)]
    ns = sum(r.fwd_compute + r.ig_compute + r.wg_compute for r in rows)
    if ns * 1000 > MAX_TIME_PS // 2:
        raise WorkloadError(
            f"{source}: one iteration's compute takes {format_ps(ns * 1000)} (the sum of the "
            f"rows' compute times, in ns); simulated time must stay below "
            f"{format_ps(MAX_TIME_PS // 2)}; check the compute columns (ns, not ps)"
        )


# --------------------------------------------------------------------------------------------
# AICB -> ops


def _block_layers(block: list[AicbRow]) -> tuple[list[int], int]:
    """Local layer index of each block row (-1 for non-layer rows) and the layer count.

    A row whose name contains ``attention`` and follows a row that does not starts a transformer
    layer (AICB may split attention into ``attention_column``/``attention_row``); ``mlp``/``moe``/
    ``expert`` rows after it belong to the same layer.
    """
    cur, out, prev_attn = -1, [], False
    for row in block:
        n = row.name.lower()
        attn = "attention" in n
        if attn:
            cur += 0 if prev_attn else 1
            out.append(cur)
        elif cur >= 0 and ("mlp" in n or "moe" in n or "expert" in n):
            out.append(cur)
        else:
            out.append(-1)
        prev_attn = attn
    return out, cur + 1


def _comm_name(row: str, column: str, collective: str, group: str) -> str:
    """Our op name for the collective of ``column`` in row ``row``."""
    low = row.lower()
    if group == "tp" and collective == "allreduce" and column in ("fwd", "ig"):
        grad = column == "ig"
        if low.startswith("attention"):
            return "tp_attn_in_grad" if grad else "tp_attn_out"
        if low.startswith("mlp"):
            return "tp_mlp_in_grad" if grad else "tp_mlp_out"
        if low == "embedding_layer":
            return "tp_embedding_grad" if grad else "tp_embedding"
        m = re.fullmatch(r"cross_entropy(\d+)", low)
        if m and not grad:
            return f"tp_cross_entropy_{int(m.group(1)) - 1}"
    if column == "wg" and group in ("dp", "edp"):
        if collective in ("allreduce", "reducescatter"):
            return f"{group}_grad_bucket"
        if collective == "allgather":
            return f"{group}_param_gather"
    return f"{group}_{row}_{column}"


class _AicbStage:
    """Writes the template of one pipeline stage from the file's sections."""

    def __init__(
        self,
        w: AicbWorkload,
        stage: int,
        head: list[AicbRow],
        blocks: list[list[AicbRow]],
        tail: list[AicbRow],
    ) -> None:
        self.w, self.stage, self.lay = w, stage, w.layout
        self.head, self.blocks, self.tail = head, blocks, tail
        self.t = StageTemplate()
        self.seq = 0
        self.last_wg: int | None = None
        self.group_size = {
            "tp": self.lay.tp,
            "dp": self.lay.dp,
            "ep": self.lay.ep,
            "edp": self.lay.edp,
        }
        self.layers = [_block_layers(b) for b in blocks]

    def compute(self, row: AicbRow, column: str, phase: str, layer: int, mb: int) -> None:
        ns = getattr(row, f"{column}_compute")
        if ns > 0:
            self.t.add(
                TemplateOp(
                    f"{row.name}_{column}", "compute", phase, 0, layer, mb, duration_ps=ns * 1000
                )
            )

    def coll(
        self, row: AicbRow, column: str, phase: str, layer: int, mb: int, blocking: bool
    ) -> None:
        c = row.comm(column)
        if c is None:
            return
        collective, group, size = c
        if size <= 0 or self.group_size[group] <= 1:
            return
        self.seq += 1
        op = TemplateOp(
            _comm_name(row.name, column, collective, group),
            "comm",
            phase,
            0,
            layer,
            mb,
            collective=collective,
            group=group,
            key=("aicb", self.stage, self.seq),
            size_bytes=size,
        )
        if blocking:
            self.t.add(op)
        else:
            deps = list(self.t.pending) + ([self.last_wg] if self.last_wg is not None else [])
            self.last_wg = self.t.add(op, deps=deps, chain=False)

    def fwd(self, row: AicbRow, phase: str, layer: int, mb: int) -> None:
        self.compute(row, "fwd", phase, layer, mb)
        self.coll(row, "fwd", phase, layer, mb, blocking=True)

    def bwd(self, row: AicbRow, phase: str, layer: int, mb: int, wg_comm: bool) -> None:
        self.compute(row, "ig", phase, layer, mb)
        self.coll(row, "ig", phase, layer, mb, blocking=True)
        self.compute(row, "wg", phase, layer, mb)
        if wg_comm:
            self.coll(row, "wg", phase, layer, mb, blocking=False)

    def p2p(self, name: str, send: bool, rule: str, key: tuple, phase: str, mb: int) -> None:
        if self.w.pp_comm <= 0:
            return
        op = TemplateOp(
            name,
            "comm",
            phase,
            0,
            -1,
            mb,
            collective="send" if send else "recv",
            group="pp",
            key=key,
            peer=rule,
            anchor_self=send,
            size_bytes=self.w.pp_comm,
        )
        idx = self.t.add(op, deps=list(self.t.pending), chain=False)
        self.t.pending = self.t.pending + [idx]

    def build(self) -> StageTemplate:
        s, pp, m = self.stage, self.lay.pp, len(self.blocks)
        for row in self.head:
            self.fwd(row, "fwd", -1, -1)
        for ps in stage_schedule(s, pp, m):
            mb = ps.microbatch
            block = self.blocks[mb]
            local, n_layers = self.layers[mb]
            glob = [s * n_layers + x if x >= 0 else -1 for x in local]
            if ps.direction == "fwd":
                if s > 0:
                    self.p2p("pp_recv_fwd", False, "pp_prev", ("pp", "fwd", mb, s - 1), "fwd", mb)
                for row, layer in zip(block, glob, strict=True):
                    self.fwd(row, "fwd", layer, mb)
                if s < pp - 1:
                    self.p2p("pp_send_fwd", True, "pp_next", ("pp", "fwd", mb, s), "fwd", mb)
            else:
                if s < pp - 1:
                    self.p2p("pp_recv_bwd", False, "pp_next", ("pp", "bwd", mb, s + 1), "bwd", mb)
                for row, layer in zip(reversed(block), reversed(glob), strict=True):
                    self.bwd(row, "bwd", layer, mb, wg_comm=mb == m - 1)
                if s > 0:
                    self.p2p("pp_send_bwd", True, "pp_prev", ("pp", "bwd", mb, s), "bwd", mb)
        for row in self.tail:
            self.fwd(row, "step", -1, -1)
        for row in reversed(self.tail):
            self.bwd(row, "step", -1, -1, wg_comm=True)
        for row in reversed(self.head):
            self.bwd(row, "bwd", -1, -1, wg_comm=True)
        return self.t


def aicb_to_ops(w: AicbWorkload) -> pl.DataFrame:
    """The ops table of one iteration of an AICB workload, for all ``all_gpus`` ranks.

    Parameters
    ----------
    w : AicbWorkload
        From :func:`read_aicb`.

    Returns
    -------
    polars.DataFrame
        Schema :data:`wormsim.workload.ops.OPS_SCHEMA`, rank-major, schedule order within a
        rank; the execution semantics are those of the module docstring.
    """
    check_aicb_scale(w)
    head, blocks, tail = w.sections()
    key_ids: dict[tuple, int] = {}
    frames = []
    base = 0
    for stage in range(w.pp):
        tmpl = _AicbStage(w, stage, head, blocks, tail).build()
        frames.append(expand_stage(w.layout, stage, tmpl, key_ids, base))
        base += len(tmpl.ops) * w.layout.stage_size
    return pl.concat(frames, rechunk=True)


# --------------------------------------------------------------------------------------------
# ops -> AICB

_WG_GROUPS = {"dp": "", "dp_cp": "", "edp": "_DP_EP"}
_COL_GROUPS = {"tp": "", "ep": "_EP", "edp": "_DP_EP"}


def _aicb_type(collective: str, suffix: str) -> str:
    return _AICB_TYPE[collective] + suffix


def _ns(ps: int) -> int:
    return max(1, int(round(ps / 1000))) if ps > 0 else 0


def _infer_layout(ops: pl.DataFrame) -> RankLayout:
    world = int(ops["rank"].max()) + 1
    pp = int(ops["stage"].max()) + 1
    sizes = (
        ops.filter((pl.col("kind") == "comm") & ~pl.col("collective").is_in(["send", "recv"]))
        .group_by("group", "coll_id")
        .len()
        .group_by("group")
        .agg(pl.col("len").max())
    )
    size = dict(zip(sizes["group"].to_list(), sizes["len"].to_list(), strict=True))
    tp, ep = int(size.get("tp", 1)), int(size.get("ep", 1))
    etp = int(size.get("etp", tp))
    return RankLayout(tp=tp, cp=1, dp=world // (tp * pp), pp=pp, ep=ep, etp=etp)


def _resolve_layout(ops: pl.DataFrame, config: Any) -> RankLayout:
    if isinstance(config, RankLayout):
        return config
    if config is not None and hasattr(config, "parallel"):
        from .builder import resolve_layout

        return resolve_layout(config.model, config.parallel, config.cluster.gpus)
    return _infer_layout(ops)


def _row_label(names: list[str], slot: Any) -> str:
    if slot == "pre":
        return "embedding_layer"
    if slot == "post":
        return "lm_head"
    text = " ".join(names)
    if "attn" in text:
        return "attention_layer"
    if "mlp" in text:
        return "mlp_layer"
    if "ep_" in text or "moe" in text or "expert" in text:
        return "moe_layer"
    return "layer"


@dataclass
class _Segment:
    """The compute before a collective plus the collective: one column of one AICB row."""

    slot: Any  # layer index, or "pre"/"post" for non-layer ops before/after the layers
    compute_ps: int
    comm: dict | None
    names: list[str]


def _segments(ops: list[dict], backward: bool) -> list[_Segment]:
    """Cut one pass (ops in execution order) into segments.

    A segment ends at each collective and at each change of layer. Non-layer ops before the
    first layer op are ``pre`` (``post`` in a backward pass, which runs the model in reverse).
    """
    out: list[_Segment] = []
    acc, names, seen_layer, cur = 0, [], False, None
    before, after = ("post", "pre") if backward else ("pre", "post")
    for op in ops:
        if op["layer"] >= 0:
            slot: Any = op["layer"]
            seen_layer = True
        else:
            slot = after if seen_layer else before
        if slot != cur and names:
            out.append(_Segment(cur, acc, None, names))
            acc, names = 0, []
        cur = slot
        names.append(op["name"])
        if op["kind"] == "compute":
            acc += op["duration_ps"]
        else:
            out.append(_Segment(slot, acc, op, names))
            acc, names = 0, []
    if names:
        out.append(_Segment(cur, acc, None, names))
    return out


def _slot_order(slot: Any) -> tuple[int, int]:
    if slot == "pre":
        return (0, 0)
    if slot == "post":
        return (2, 0)
    return (1, int(slot))


def _block_rows(fwd_ops: list[dict], bwd_ops: list[dict]) -> list[AicbRow]:
    """AICB rows of one micro-batch: per slot, forward segments top down, backward bottom up."""
    fseg = _segments(fwd_ops, backward=False)
    bseg = _segments(bwd_ops, backward=True)
    slots = sorted({x.slot for x in fseg} | {x.slot for x in bseg}, key=_slot_order)
    rows = []
    for slot in slots:
        sf = [x for x in fseg if x.slot == slot]
        sb = [x for x in bseg if x.slot == slot]
        n = max(len(sf), len(sb))
        for i in range(n):
            f = sf[i] if i < len(sf) else None
            b = sb[n - 1 - i] if n - 1 - i < len(sb) else None
            vals: dict[str, Any] = {"name": _row_label((f or b).names, slot)}  # type: ignore[union-attr]
            for col, seg in (("fwd", f), ("ig", b)):
                if seg is None:
                    continue
                vals[f"{col}_compute"] = _ns(seg.compute_ps)
                if seg.comm is not None:
                    op = seg.comm
                    vals[f"{col}_comm_type"] = _aicb_type(
                        op["collective"], _COL_GROUPS[op["group"]]
                    )
                    vals[f"{col}_comm_bytes"] = int(op["size_bytes"])
            rows.append(AicbRow(**vals))
    return rows


def ops_to_workload(ops: pl.DataFrame, config: Any = None, *, rank: int = 0) -> AicbWorkload:
    """One representative rank's schedule as an :class:`AicbWorkload`.

    Parameters
    ----------
    ops : polars.DataFrame
        An ops table (e.g. from :func:`wormsim.workload.builder.build_ops`).
    config : ExperimentConfig, RankLayout or None
        Where TP, PP, EP and the world size come from: an experiment config (its layout is
        resolved), a layout, or ``None`` to infer them from the table (PP from ``stage``, TP and
        EP from the size of the ``tp``/``ep`` communicators).
    rank : int
        The rank whose schedule is written (every rank of the imported file runs it).

    Warns
    -----
    AicbExportWarning
        When ops with no AICB equivalent (``pp``/``cp`` collectives, ``etp`` ones when
        ``etp != tp``, CP transfers) are left out.
    """
    lay = _resolve_layout(ops, config)
    sub = ops.filter(pl.col("rank") == rank).sort("seq")
    if sub.height == 0:
        raise WorkloadError(f"the ops table has no rank {rank}; pick a rank in 0..{lay.world - 1}")
    recs = sub.select(
        "name",
        "kind",
        "phase",
        "layer",
        "microbatch",
        "duration_ps",
        "collective",
        "group",
        "size_bytes",
    ).to_dicts()
    dropped: Counter[str] = Counter()
    pp_comm = 0
    head: list[AicbRow] = []
    tail: list[AicbRow] = []
    passes: dict[tuple[int, str], list[dict]] = {}
    for op in recs:
        mb = op["microbatch"]
        if op["kind"] == "comm":
            coll, group = op["collective"], op["group"]
            if group == "etp" and lay.etp == lay.tp:
                group = op["group"] = "tp"  # expert TP = TP: the same communicators
            if coll in ("send", "recv"):
                if group == "pp":
                    pp_comm = pp_comm or int(op["size_bytes"])
                else:
                    dropped[f"{op['name']} ({group} {coll})"] += 1
                continue
            if group in _WG_GROUPS:
                head.append(
                    AicbRow(
                        f"iter_{op['name']}",
                        wg_comm_type=_aicb_type(coll, _WG_GROUPS[group]),
                        wg_comm_bytes=int(op["size_bytes"]),
                    )
                )
                continue
            if group not in _COL_GROUPS:
                dropped[f"{op['name']} ({group} {coll})"] += 1
                continue
            if mb < 0:
                head.append(
                    AicbRow(
                        f"iter_{op['name']}",
                        ig_comm_type=_aicb_type(coll, _COL_GROUPS[group]),
                        ig_comm_bytes=int(op["size_bytes"]),
                    )
                )
                continue
        elif mb < 0:
            tail.append(AicbRow(f"iter_{op['name']}", fwd_compute=_ns(op["duration_ps"])))
            continue
        direction = "fwd" if op["phase"] == "fwd" else "bwd"
        passes.setdefault((mb, direction), []).append(op)
    if dropped:
        what = ", ".join(f"{k} x{v}" for k, v in sorted(dropped.items()))
        warnings.warn(
            f"AICB export of rank {rank} leaves out ops the format cannot express: {what}",
            AicbExportWarning,
            stacklevel=2,
        )
    mbs = sorted({mb for mb, _ in passes})
    blocks = [_block_rows(passes.get((mb, "fwd"), []), passes.get((mb, "bwd"), [])) for mb in mbs]
    layers = sub.filter(pl.col("layer") >= 0)["layer"].n_unique()
    return AicbWorkload(
        tp=lay.tp,
        pp=lay.pp,
        ga=max(len(mbs), 1),
        all_gpus=lay.world,
        ep=lay.ep,
        vpp=layers,
        pp_comm=pp_comm if lay.pp > 1 else 0,
        rows=tuple(head + [r for b in blocks for r in b] + tail),
    )


def ops_to_aicb(ops: pl.DataFrame, config: Any = None, *, rank: int = 0) -> str:
    """The AICB ``.txt`` text of one rank's schedule (see :func:`ops_to_workload`)."""
    return ops_to_workload(ops, config, rank=rank).to_text()


def write_aicb(path: str | Path, ops: pl.DataFrame, config: Any = None, *, rank: int = 0) -> Path:
    """Write :func:`ops_to_aicb` to ``path`` and return the path."""
    path = Path(path)
    path.write_text(ops_to_aicb(ops, config, rank=rank))
    return path
