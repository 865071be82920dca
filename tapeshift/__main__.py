"""``python -m tapeshift`` is the ``tapeshift`` command line."""

import sys

from tapeshift.migrate.commands.cli import main

if __name__ == "__main__":
    sys.exit(main())
