"""``wormsim memo …``: look into and manage the Wormhole memo store.

Every command works on ``--store``, else ``$WORMSIM_MEMO_STORE``, else
``$XDG_CACHE_HOME/wormsim/memo.sqlite`` (:func:`~wormsim.memo.store.default_store_path`); the
``--help`` texts show the path that resolves to. ``stats`` and ``inspect`` only read (the store
may be read-only); a file that is not a wormsim store is refused without being modified.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table
from typer.core import TyperCommand, TyperGroup

from wormsim.clikit import JsonOpt, emit, fail, user_errors
from wormsim.humanize import human_number
from wormsim.memo.records import MemoStats
from wormsim.memo.store import ENV_VAR, MemoStore, default_store_path
from wormsim.units import BPS_PER_GBPS_F, PS_PER_US_F

__all__ = ["app"]

_ABOUT = "The Wormhole memo store: stats, inspect, clear."


class _MemoGroup(TyperGroup):
    """``memo --help`` names the default store as resolved now (environment included)."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self.help = (
            f"{_ABOUT}\n\nDefault store: {default_store_path()} (--store, else ${ENV_VAR}, "
            "else $XDG_CACHE_HOME/wormsim/memo.sqlite)."
        )
        super().format_help(ctx, formatter)


class _MemoCommand(TyperCommand):
    """A memo command whose ``--store`` help shows the default store as resolved now."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        for param in self.params:
            if param.name == "store" and hasattr(param, "show_default"):
                param.show_default = str(default_store_path())
        super().format_help(ctx, formatter)


app = typer.Typer(help=_ABOUT, no_args_is_help=True, cls=_MemoGroup)

StoreOpt = Annotated[
    Path | None,
    typer.Option(
        "--store",
        help=f"Memo store file (else ${ENV_VAR}, else the cache directory).",
        envvar=ENV_VAR,
        dir_okay=False,
    ),
]


@app.callback()
def _main() -> None:
    """The Wormhole memo store: stats, inspect, clear."""


def _open(store: Path | None, *, readonly: bool) -> MemoStore:
    return MemoStore(store or default_store_path(), create=False, readonly=readonly)


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError  # pragma: no cover


def _when(t: float | None) -> str:
    return "-" if t is None else time.strftime("%Y-%m-%d", time.localtime(t))


def _stats_json(s: MemoStats) -> dict[str, Any]:
    out = asdict(s)
    out["path"] = str(s.path)
    return out


@app.command("stats", cls=_MemoCommand)
def stats(
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Totals of the store, and entries and hits per namespace."""
    with user_errors():
        s = _open(store, readonly=True).stats()
    if as_json:
        typer.echo(json.dumps(_stats_json(s), indent=2))
        return
    console = Console()
    head = Table(title="memo store", show_header=False, box=box.SIMPLE)
    head.add_column("key")
    head.add_column("value", justify="right")
    for k, v in (
        ("path", str(s.path)),
        ("size", _bytes(s.size_bytes)),
        ("schema", str(s.schema_version)),
        ("entries", str(s.entries)),
        ("hits", str(s.hits)),
        ("namespaces", str(len(s.namespaces))),
    ):
        head.add_row(k, v)
    console.print(head)
    if s.namespaces:
        t = Table(title="per namespace", box=box.SIMPLE_HEAD)
        for col in ("namespace", "cc", "entries", "hits", "max flows"):
            t.add_column(col, justify="left" if col in ("namespace", "cc") else "right")
        for ns in s.namespaces:
            cc = str(ns.params.get("cc", "-")) if ns.params else "-"
            t.add_row(ns.namespace[:12], cc, str(ns.entries), str(ns.hits), str(ns.max_flows))
        console.print(t)


@app.command("inspect", cls=_MemoCommand)
def inspect(
    store: StoreOpt = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="Rows to show (0: all).")] = 20,
    namespace: Annotated[
        str | None, typer.Option("--namespace", help="Only this namespace (key or prefix).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """List stored transients, most hit first."""
    if limit < 0:
        fail(f"--limit must be >= 0, got {limit}")
    with user_errors():
        memo = _open(store, readonly=True)
        rows = memo.entries(limit, namespace)
    if as_json:
        entries = [
            {
                "entry_id": e.entry_id,
                "namespace": e.namespace,
                "flows_count": e.n_flows,
                "edges_count": e.n_edges,
                "t_conv_ps": e.t_conv_ps,
                "end_rates_bps": list(e.end_rates_bps),
                "hits_count": e.hits,
                "created_s": e.created_s,
                "version": e.version,
            }
            for e in rows
        ]
        typer.echo(json.dumps({"entries": entries}, indent=2, default=str))
        return
    t = Table(
        title=f"memo entries ({len(rows)} shown)",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    cols = ("id", "ns", "flows", "edges", "T_conv us", "end Gb/s", "hits", "created")
    for col in (*cols, "version"):
        left = col in ("ns", "end Gb/s", "created", "version")
        t.add_column(col, justify="left" if left else "right", no_wrap=True)
    for e in rows:
        lo, hi = min(e.end_rates_bps) / BPS_PER_GBPS_F, max(e.end_rates_bps) / BPS_PER_GBPS_F
        t.add_row(
            str(e.entry_id),
            e.namespace[:8],
            str(e.n_flows),
            str(e.n_edges),
            f"{e.t_conv_ps / PS_PER_US_F:.3f}",
            human_number(lo, trim=True)
            if lo == hi
            else f"{human_number(lo, trim=True)}-{human_number(hi, trim=True)}",
            str(e.hits),
            _when(e.created_s),
            e.version,
        )
    Console().print(t)
    if memo.corrupt_ids:
        typer.echo(
            f"note: {len(memo.corrupt_ids)} corrupt entries are not shown (runs skip them; "
            "`wormsim memo clear` deletes them)",
            err=True,
        )


@app.command("clear", cls=_MemoCommand)
def clear(
    store: StoreOpt = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    namespace: Annotated[
        str | None, typer.Option("--namespace", help="Only this namespace key.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Delete stored entries (all, or one namespace's)."""
    with user_errors():
        memo = _open(store, readonly=False)
        what = f"namespace {namespace}" if namespace else "all entries"
        if not yes:
            typer.confirm(f"Delete {what} from {memo.path}?", abort=True)
        n = memo.clear(namespace)
    emit(
        {"deleted_count": n, "store": str(memo.path)},
        as_json,
        f"deleted {n} entries from {memo.path}",
    )
