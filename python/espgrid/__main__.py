"""python3 -m espgrid TOPOLOGY TRAJECTORY... -o mean.dx [options]: the same as espgrid-trajectory."""
import sys

from espgrid.trajectory import main

sys.exit(main())
