"""``python -m wormsim``."""

from wormsim.cli import main

main()
