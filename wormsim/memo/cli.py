"""``wormsim memo …``: look into and manage the Wormhole memo store."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from wormsim.memo.errors import MemoError
from wormsim.memo.store import MemoStore, default_store_path

__all__ = ["app"]

app = typer.Typer(help="The Wormhole memo store: stats, inspect, clear.", no_args_is_help=True)

StoreOpt = Annotated[
    Path | None,
    typer.Option(
        "--store",
        help="Memo store file [default: ~/.cache/wormsim/memo.sqlite].",
        envvar="WORMSIM_MEMO_STORE",
        dir_okay=False,
    ),
]


@app.callback()
def _main() -> None:
    """The Wormhole memo store: stats, inspect, clear."""


def _fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=2)


@contextmanager
def _errors() -> Iterator[None]:
    try:
        yield
    except MemoError as exc:
        _fail(str(exc))
    except OSError as exc:
        _fail(f"cannot access {exc.filename or ''}: {exc.strerror or exc}")


def _open(store: Path | None) -> MemoStore:
    return MemoStore(store or default_store_path(), create=False)


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError  # pragma: no cover


def _when(t: float | None) -> str:
    return "-" if t is None else time.strftime("%Y-%m-%d", time.localtime(t))


@app.command("stats")
def stats(store: StoreOpt = None) -> None:
    """Totals of the store, and entries and hits per namespace."""
    with _errors():
        s = _open(store).stats()
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


@app.command("inspect")
def inspect(
    store: StoreOpt = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="Rows to show (0: all).")] = 20,
    namespace: Annotated[
        str | None, typer.Option("--namespace", help="Only this namespace (key or prefix).")
    ] = None,
) -> None:
    """List stored transients, most hit first."""
    if limit < 0:
        _fail(f"--limit must be >= 0, got {limit}")
    with _errors():
        rows = _open(store).entries(limit, namespace)
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
        lo, hi = min(e.end_rates_bps) / 1e9, max(e.end_rates_bps) / 1e9
        t.add_row(
            str(e.entry_id),
            e.namespace[:8],
            str(e.n_flows),
            str(e.n_edges),
            f"{e.t_conv_ps / 1e6:.3f}",
            f"{lo:.3g}" if lo == hi else f"{lo:.3g}-{hi:.3g}",
            str(e.hits),
            _when(e.created_s),
            e.version,
        )
    Console().print(t)


@app.command("clear")
def clear(
    store: StoreOpt = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    namespace: Annotated[
        str | None, typer.Option("--namespace", help="Only this namespace key.")
    ] = None,
) -> None:
    """Delete stored entries (all, or one namespace's)."""
    with _errors():
        memo = _open(store)
        what = f"namespace {namespace}" if namespace else "all entries"
        if not yes:
            typer.confirm(f"Delete {what} from {memo.path}?", abort=True)
        n = memo.clear(namespace)
    typer.echo(f"deleted {n} entries from {memo.path}")
