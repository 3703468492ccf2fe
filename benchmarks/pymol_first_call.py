"""Times `espgrid 1hpv` inside PyMOL (docs/pymol.md, issue 34's target: <= 2 s on the 2-core
development machine): from `import espgrid.pymol` to the coloured surface, then a second map of the
same atoms. Run with Debian's PyMOL, headless, espgrid's module and program on the paths:

    for i in $(seq 10); do PYTHONPATH=build/python ESPGRID=build/espgrid \
        /usr/bin/pymol -cq benchmarks/pymol_first_call.py; done
"""

import sys
import time

from pymol import cmd

cmd.load("/usr/share/pymol/data/tut/1hpv.pdb")  # Debian pymol-data: HIV protease with amprenavir
t0 = time.monotonic()
import espgrid.pymol  # noqa: E402,F401  (registers the command; part of what a user waits for)

cmd.do("espgrid 1hpv")
t1 = time.monotonic()
if cmd.get("surface_color", "1hpv") != "1hpv_esp_ramp":
    sys.exit("espgrid 1hpv did not colour the surface")
cmd.do("espgrid 1hpv, coulomb")
t2 = time.monotonic()
print(f"from the import to the coloured surface {t1 - t0:.2f} s; a second map of the same atoms {t2 - t1:.2f} s",
      file=sys.stderr)
