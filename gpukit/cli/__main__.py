import sys

from gpukit.cli import main

sys.exit(main())
