import sys

from hsapy.cli import main

sys.exit(main())
