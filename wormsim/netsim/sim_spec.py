"""The experiment's ``sim`` section: which engine runs, its seed, and the Wormhole knobs
(:class:`~wormsim.netsim.wormhole.spec.WormholeSpec`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from wormsim.netsim.wormhole.spec import WormholeSpec

__all__ = ["SimSpec"]


class SimSpec(BaseModel):
    """How the network is simulated.

    Attributes
    ----------
    mode : {"packet", "wormhole", "flow"}
        Packet-level, packet-level with Wormhole, or max-min fair fluid.
    seed : int
        Seed of everything random in the simulation (ECMP hashing).
    routing : {"hash", "ns3"}
        ECMP path choice: our seeded hash, or the HPCC ns-3 simulator's exact choice.
    wormhole : WormholeSpec
        Wormhole knobs (used in mode ``wormhole``).
    """

    model_config = ConfigDict(extra="forbid")

    mode: Literal["packet", "wormhole", "flow"] = Field(
        default="packet",
        description="Packet-level, packet-level with Wormhole, or max-min fair fluid.",
    )
    seed: int = Field(
        default=0, description="Seed of everything random in the simulation (ECMP hashing)."
    )
    routing: Literal["hash", "ns3"] = Field(
        default="hash",
        description="ECMP path choice: our seeded hash, or the HPCC ns-3 simulator's exact choice.",
    )
    wormhole: WormholeSpec = Field(
        default_factory=WormholeSpec, description="Wormhole knobs (used in mode 'wormhole')."
    )
