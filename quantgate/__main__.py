"""`python -m quantgate`: the command line, as the `quantgate` script runs it."""

import sys

from quantgate.cli._main import main

sys.exit(main())
