import sys

from qlb.cli import main

sys.exit(main())
