"""`python -m pipebench.cli`: the `pipebench` command."""
import sys

from pipebench.cli import main

sys.exit(main())
