"""espgrid for PyMOL's plugin manager: loading it (at start-up, or Plugin -> Plugin Manager)
adds the command

    espgrid OBJECT [, model [, spacing [, limit [, isosurfaces [, padding [, options]]]]]]

which colours OBJECT's surface by its electrostatic potential (espgrid.pymol; docs/pymol.md),
and a menu entry that runs it on every enabled molecular object. It needs the espgrid Python
package in PyMOL's Python (`cmake --install` puts it where Debian's python3 finds it).
"""


def __init_plugin__(app=None):
    import espgrid.pymol  # registers the command

    try:
        from pymol.plugins import addmenuitemqt
    except ImportError:  # PyMOL without Qt (pymol -c): the command alone
        return

    def colour_enabled_objects():
        from pymol import cmd
        for obj in cmd.get_names("public_objects", enabled_only=1):
            if cmd.get_type(obj) == "object:molecule":
                espgrid.pymol.espgrid_command(obj)

    addmenuitemqt("espgrid: colour surfaces by potential", colour_enabled_objects)
