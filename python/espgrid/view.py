"""Map.view: the `espgrid view` page of a map, from Python (docs/python.md, docs/viz.md).

    phi = espgrid.compute_map("data/fasciculin2.pqr", model="debye", dielectric=78.54, ionic_strength=0.15)
    page = phi.view("data/fasciculin2.pqr", "fas2.html")   # one self-contained HTML file
    page                                                     # in Jupyter: the page, inline

The page is the one `espgrid view STRUCTURE MAP -o PAGE.html` writes: the molecular surface
coloured by the potential 1.4 Å outside it, the ±1 kT/e isosurfaces and the atoms, with
3Dmol.js inlined (nothing is fetched when it opens).
"""

import html as _html
import os

from . import _espgrid


class View:
    """An `espgrid view` page: .html (str), .path (where it was written, or None), .info (dict:
    vertices, triangles, values (how the surface values were obtained), limit, units, min, max,
    notes, bytes, seconds). In a notebook it shows itself (an <iframe> holding the page)."""

    def __init__(self, html, path, info):
        self.html = html
        self.path = path
        self.info = info

    def save(self, path):
        """Writes the page to `path` (.html), atomically."""
        path = os.fspath(path)
        _check_page_path(path)
        _espgrid.write_page(path, self.html.encode("utf-8"))
        self.path = path
        return path

    def _repr_html_(self):
        # srcdoc keeps the page self-contained in the notebook too (no file, no server).
        return ('<iframe style="width:100%;height:600px;border:1px solid #ddd" srcdoc="'
                + _html.escape(self.html, quote=True) + '"></iframe>')

    def __repr__(self):
        where = f" at {self.path}" if self.path else ""
        return (f"<espgrid.View{where}: {self.info['vertices']:,} vertices, colours "
                f"±{self.info['limit']:g} {self.info['units']}, {self.info['bytes'] / 1048576:.1f} MiB>")


def _check_page_path(path):
    if os.path.splitext(os.fsdecode(path))[1].lower() not in (".html", ".htm"):
        raise _espgrid.UsageError(f"{path}: the page is HTML; name it NAME.html")


def view(self, structure, path=None, *, limit=None, levels=None, values="auto", offset=1.4,
         surface_spacing=0.5, probe=0.0, title=None, view="auto"):
    """The page showing this map on `structure`'s molecular surface, as an espgrid.View;
    written to `path` (.html) when given.

    structure: the Structure (or its file, read with espgrid.read_structure) the map was
    computed from. limit: the colour scale ±limit in the map's units, or "auto" (default: ±5
    kT/e, ±10 kcal/mol/e, or 5 kT/e in volts; adjustable in the page). levels: isosurface
    levels (default ±1 kT/e in the map's units). values: "auto" (the exact direct sum over the
    atoms where it agrees with the map and is affordable, else the map interpolated), "sum"
    or "map". offset: Å outside the surface where the potential is taken. surface_spacing,
    probe: the molecular surface's grid (Å) and probe radius (Å). title: the page's heading.
    view: the first view, "auto" (along the atoms' thinnest axis) or "+x", "-x", ..., "-z".
    """
    from . import Structure, read_structure
    if not isinstance(structure, Structure):
        structure = read_structure(structure)
    if path is not None:
        path = os.fspath(path)
        _check_page_path(path)
    if levels is not None:
        levels = [float(x) for x in levels]
    html, info = _espgrid.view_page(self, structure, limit, levels, values, float(offset),
                                    float(surface_spacing), float(probe), title or "", view)
    page = View(html.decode("utf-8"), None, info)
    if path is not None:
        page.save(path)
    return page
