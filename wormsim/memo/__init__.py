"""memo stage."""
