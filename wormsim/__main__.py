"""``python -m wormsim`` (the ``wormsim`` command is :func:`wormsim.cli.main` too).

:mod:`wormsim` installs a quiet SIGINT handler when it is imported as the command, so a Ctrl-C
while the command's modules load ends the process without a traceback; :func:`~wormsim.cli.main`
then takes over.
"""

from wormsim.cli import main

if __name__ == "__main__":
    main()
