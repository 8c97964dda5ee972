"""netsim stage."""
