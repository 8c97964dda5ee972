"""File formats of the peers: HPCC ns-3 topology, flow, fct and config files; SimAI topology and
SimAI.conf."""
