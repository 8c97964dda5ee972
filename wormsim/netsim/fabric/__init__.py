"""The fabric: the cluster layout, topology kinds and their builders, ECMP routing and paths."""
