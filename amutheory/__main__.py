import sys

from amutheory.cli import main

sys.exit(main())
