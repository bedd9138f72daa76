import sys

from leakygrad.cli import main

sys.exit(main())
