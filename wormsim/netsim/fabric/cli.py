"""``wormsim topology …``: write an experiment's fabric to a file, and show a fabric."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from wormsim.clikit import JsonOpt, SetOpt

__all__ = ["app"]

app = typer.Typer(
    help="Fabrics: export an experiment's fabric to a SimAI or HPCC file, show one.",
    no_args_is_help=True,
)

_EXPERIMENT_SUFFIXES = (".yaml", ".yml", ".toml", ".json")


@app.command()
def export(
    experiment: Annotated[Path, typer.Argument(metavar="EXPERIMENT", help="Experiment file.")],
    out: Annotated[Path, typer.Option("-o", "--out", metavar="FILE", help="File to write.")],
    format: Annotated[
        Literal["simai", "hpcc"],
        typer.Option(
            "--format",
            help="simai: SimAI's topology file (NVLink as one NVSwitch per server); hpcc: "
            "HPCC ns-3 topology.txt (no NVLink: the experiment's cluster section gives it).",
        ),
    ] = "simai",
    set_: SetOpt = None,
) -> None:
    """Write the experiment's fabric to FILE; `pipeline run EXPERIMENT --topology FILE` then
    simulates the same fabric (same iteration time), ready to edit."""
    from wormsim.clikit import user_errors
    from wormsim.experiment import load_experiment
    from wormsim.netsim.fabric.builders import build_topology
    from wormsim.netsim.formats.simai_topology import write_fabric

    with user_errors():
        cfg = load_experiment(experiment, set_ or [])
        topo = build_topology(cfg.cluster)
        write_fabric(topo, out, format, cfg.cluster.gpus_per_node, cfg.hardware.gpu)
    typer.echo(f"wrote {out} ({format} format, {topo.n_nodes} nodes, {topo.n_ports // 2} links)")


def _load(source: Path, set_: list[str], gpus_per_node: int | None):
    """The topology of an experiment or a fabric file, and a line saying what it is."""
    from wormsim.netsim.fabric.builders import build_topology
    from wormsim.netsim.formats.topology_file import fabric_topology, read_fabric_file

    if source.is_dir():
        from wormsim.errors import ConfigError

        raise ConfigError(f"{source} is a directory; give an experiment file or a topology file")
    if source.suffix.lower() in _EXPERIMENT_SUFFIXES:
        from wormsim.experiment import load_experiment

        cfg = load_experiment(source, set_)
        c = cfg.cluster
        kind = f"file {c.topology_file}" if c.topology_file else f"built-in {c.topology}"
        return build_topology(c), f"fabric of {source} ({kind}, {c.gpus} GPUs)"
    fabric = read_fabric_file(source)
    gps = fabric.gpus_per_server or gpus_per_node or 8
    note = "" if fabric.gpus_per_server else f", {gps} GPUs per server assumed (--gpus-per-node)"
    topo = fabric_topology(fabric, fabric.gpus, gps, fabric.nvlink_bps or 0)
    return topo, f"{fabric.format.upper()} topology file {source}{note}"


@app.command()
def show(
    source: Annotated[
        Path,
        typer.Argument(
            metavar="EXPERIMENT|FILE",
            help="An experiment file (.yaml, .toml, .json) or a SimAI/HPCC topology file.",
        ),
    ],
    plot: Annotated[
        Path | None, typer.Option("--plot", metavar="PNG", help="Also draw the fabric here.")
    ] = None,
    gpus_per_node: Annotated[
        int | None,
        typer.Option("--gpus-per-node", min=1, help="Server size for an HPCC file (default 8)."),
    ] = None,
    set_: SetOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Count a fabric's nodes and links by tier, its oversubscription, link rates and NVLink
    domains; --plot draws it."""
    import json

    from wormsim.clikit import user_errors
    from wormsim.netsim.fabric.describe import describe_fabric, plot_fabric

    with user_errors():
        topo, what = _load(source, set_ or [], gpus_per_node)
        s = describe_fabric(topo)
        if plot is not None:
            plot_fabric(topo, plot)
    if as_json:
        typer.echo(json.dumps({"source": what, **s.to_dict()}, indent=2))
        return
    typer.echo(what)
    typer.echo("  nodes: " + ", ".join(f"{n} {k}" for k, n in s.nodes_by_tier.items()))
    for row in s.links_by_tier:
        typer.echo(
            f"  links {row['tiers']}: {row['links']} x {row['rate_Gbps']:g} Gbps, "
            f"{row['delay_ns']:g} ns"
        )
    for tier, (lo, hi) in s.oversubscription.items():
        ratio = f"{lo:g}:1" if lo == hi else f"{lo:g}:1 to {hi:g}:1"
        typer.echo(f"  oversubscription at {tier}: {ratio} (down/up capacity)")
    nv = f" at {s.nvlink_Gbps:g} Gbps per GPU" if s.nvlink_Gbps else " (no NVLink)"
    typer.echo(f"  NVLink domains: {s.servers} servers of {s.gpus_per_server} GPUs{nv}")
    if s.idle_hosts:
        typer.echo(f"  idle hosts (no rank): {s.idle_hosts}")
    if s.unreachable:
        typer.echo(f"  switches no host reaches: {s.unreachable}")
    if plot is not None:
        typer.echo(f"  picture: {plot}")
