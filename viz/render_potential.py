#!/usr/bin/python3
"""Render an espgrid (or APBS) electrostatic potential map to PNG pictures.

    viz/render_potential.py MAP [--structure FILE] [--out PREFIX] [--kinds slices,iso,surface]
                            [--limit 5] [--levels -1,1] [--size 1200x900] ...

MAP is any map espgrid writes (.dx, .dx.gz, .mrc/.map/.ccp4, .vti) or an APBS .dx. FILE is the
structure (.pqr, .xyz). Both are read by the espgrid program itself (`espgrid atoms`, `espgrid
convert`: viz/espgrid_io.py), so the pictures follow espgrid's reading rules: a truncated or
damaged map is refused with espgrid's message, never drawn. Writes

    PREFIX-slices.png   three orthogonal mid-planes (or --plane), diverging colour map
    PREFIX-iso.png      isosurfaces at --levels (red negative, blue positive) with the atoms
    PREFIX-surface.png  molecular surface coloured by the potential 1.4 Å outside it

Colours follow APBS/PyMOL/ChimeraX: red = negative, white = 0, blue = positive, limits ±--limit.
See docs/viz.md. Needs python3-vtk9, python3-numpy, python3-matplotlib; 3-D pictures need an X
display, and without one the script runs itself again under `xvfb-run -a`.
"""

import argparse
import ctypes
import ctypes.util
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from espgrid_io import MAP_EXTENSIONS, InputError, map_extension, map_to_vti, read_structure, set_espgrid  # noqa: E402,E501

KINDS = ("slices", "iso", "surface")

# Diverging colour scale shared by the slices and the 3-D pictures: red at -limit, white at 0, blue
# at +limit (the APBS/PyMOL/ChimeraX convention), ends kept bright enough to read on a shaded surface.
DIVERGING = [(0.70, 0.04, 0.09), (0.85, 0.25, 0.22), (0.95, 0.60, 0.55), (0.97, 0.97, 0.97),
             (0.58, 0.71, 0.94), (0.25, 0.45, 0.85), (0.07, 0.22, 0.70)]
NEG_COLOR = (0.80, 0.12, 0.12)
POS_COLOR = (0.12, 0.30, 0.85)
ATOM_COLOR = (0.80, 0.78, 0.70)


# ------------------------------------------------------------------------------------------------
# Command line
# ------------------------------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="render_potential.py",
        description="Render an electrostatic potential map (any map espgrid writes) to PNG: slices, "
                    "isosurfaces and a potential-coloured molecular surface.")
    p.add_argument("map", metavar="MAP", help="potential map: .dx, .dx.gz, .mrc, .map, .ccp4 or .vti (espgrid's; "
                                              "APBS's .dx)")
    p.add_argument("--espgrid", metavar="PATH",
                   help="the espgrid program that reads the structure and the map (default: $ESPGRID, "
                        "build/espgrid beside viz/, or espgrid on the PATH)")
    p.add_argument("--units", metavar="UNIT",
                   help="the unit of a map whose file does not say (kT/e, kcal/mol/e or V)")
    p.add_argument("--structure", "-s", metavar="FILE",
                   help="structure the map was computed from (.pqr, .xyz): atoms, molecular surface")
    p.add_argument("--out", "-o", metavar="PREFIX",
                   help="output prefix (default: MAP without its extension); writes PREFIX-KIND.png")
    p.add_argument("--kinds", default=None,
                   help="comma list of slices,iso,surface (default: all; surface needs --structure)")
    p.add_argument("--limit", default="5",
                   help="colour scale is -LIMIT..+LIMIT in the map's units (default 5); 'auto': the "
                        "95th percentile of |potential| on the surface (or in the map), rounded up to "
                        "1, 2, 3 or 5 x 10^n")
    p.add_argument("--levels", default="-1,1",
                   help="isosurface levels, comma list (default -1,1); negative red, positive blue; "
                        "'auto': -LIMIT,+LIMIT, where the potential leaves the colour scale")
    p.add_argument("--size", default="1200x900", help="picture size WxH in pixels (default 1200x900)")
    p.add_argument("--plane", default=None,
                   help="slices: comma list of planes AXIS=VALUE in Å (e.g. z=12.5,x=0) instead of "
                        "the three mid-planes; the nearest grid plane is used")
    p.add_argument("--atoms", choices=("spheres", "sticks", "none"), default="spheres",
                   help="how atoms are drawn in the isosurface picture (default spheres)")
    p.add_argument("--hydrogens", action="store_true",
                   help="also draw hydrogen atoms in the isosurface picture (default: heavy atoms only)")
    p.add_argument("--atom-scale", type=float, default=0.3,
                   help="sphere radius = PQR/Bondi radius x this (default 0.3)")
    p.add_argument("--probe", type=float, default=0.0,
                   help="surface: add this to every radius (1.4 gives a solvent-accessible surface; "
                        "default 0, a smooth van der Waals-like molecular surface)")
    p.add_argument("--offset", type=float, default=1.4,
                   help="surface: sample the potential this far outside the surface, along its "
                        "normals (default 1.4 Å, as ChimeraX does)")
    p.add_argument("--surface-spacing", type=float, default=0.5,
                   help="surface: spacing of the grid the surface is contoured on (default 0.5 Å)")
    p.add_argument("--palette", action="store_true",
                   help="write 256-colour palette PNGs (about 3x smaller; needs python3-pil)")
    p.add_argument("--title", default=None, help="title text (default: the map's file name)")
    p.add_argument("--view", default="auto",
                   help="camera: auto (look along the molecule's thinnest axis), or +x,-x,+y,-y,+z,-z")
    # "--levels -1,1" would read "-1,1" as an option; glue such values to their option.
    fixed, i = [], 0
    argv = list(argv)
    while i < len(argv):
        if argv[i] in ("--levels", "--limit", "--plane") and i + 1 < len(argv) and argv[i + 1].startswith("-"):
            fixed.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            fixed.append(argv[i])
            i += 1
    a = p.parse_args(fixed)
    try:
        w, h = (int(x) for x in a.size.lower().split("x"))
        if not (64 <= w <= 8192 and 64 <= h <= 8192):
            raise ValueError
        a.size = (w, h)
    except ValueError:
        p.error(f"--size must be WxH with 64..8192 pixels each, got {a.size!r}")
    if a.levels.strip() != "auto":
        try:
            a.levels = [float(x) for x in a.levels.split(",") if x.strip()]
        except ValueError:
            p.error(f"--levels must be a comma list of numbers or 'auto', got {a.levels!r}")
        if not a.levels or not all(np.isfinite(a.levels)):
            p.error("--levels must hold finite numbers")
    else:
        a.levels = "auto"
    if a.limit.strip() != "auto":
        try:
            a.limit = float(a.limit)
        except ValueError:
            p.error(f"--limit must be a positive number or 'auto', got {a.limit!r}")
        if not (a.limit > 0 and np.isfinite(a.limit)):
            p.error("--limit must be a positive number or 'auto'")
    else:
        a.limit = "auto"
    if a.kinds is None:
        a.kinds_explicit = False
        a.kinds = list(KINDS)
    else:
        a.kinds_explicit = True
        a.kinds = [k.strip() for k in a.kinds.split(",") if k.strip()]
        bad = [k for k in a.kinds if k not in KINDS]
        if bad or not a.kinds:
            p.error(f"--kinds: unknown kind(s) {', '.join(bad) or '(none)'}; choose from {','.join(KINDS)}")
    planes = []
    if a.plane:
        for item in a.plane.split(","):
            try:
                ax, val = item.split("=")
                ax = ax.strip().lower()
                if ax not in ("x", "y", "z"):
                    raise ValueError
                planes.append(("xyz".index(ax), float(val)))
            except ValueError:
                p.error(f"--plane: expected AXIS=VALUE with AXIS x, y or z, got {item!r}")
    a.plane = planes
    if a.view not in ("auto", "+x", "-x", "+y", "-y", "+z", "-z"):
        p.error("--view must be auto, +x, -x, +y, -y, +z or -z")
    if a.atom_scale <= 0 or a.surface_spacing <= 0 or a.probe < 0 or a.offset < 0:
        p.error("--atom-scale and --surface-spacing must be > 0, --probe and --offset >= 0")
    return a


# ------------------------------------------------------------------------------------------------
# X display: VTK on Debian renders through GLX; without a usable display, run again under Xvfb
# ------------------------------------------------------------------------------------------------

def display_usable():
    if not os.environ.get("DISPLAY"):
        return False
    name = ctypes.util.find_library("X11")
    if not name:
        return True  # cannot check; let VTK try
    try:
        x11 = ctypes.CDLL(name)
        x11.XOpenDisplay.restype = ctypes.c_void_p
        x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
        d = x11.XOpenDisplay(None)
        if not d:
            return False
        x11.XCloseDisplay.argtypes = [ctypes.c_void_p]
        x11.XCloseDisplay(d)
        return True
    except OSError:
        return True


def ensure_display(argv):
    if display_usable():
        return
    if os.environ.get("ESPGRID_VIZ_UNDER_XVFB"):
        raise InputError("no usable X display even under xvfb-run; 3-D pictures need an X server "
                         "(or use --kinds slices)")
    xvfb = shutil.which("xvfb-run")
    if not xvfb:
        raise InputError("no X display (DISPLAY is unset or unusable) and xvfb-run is not installed "
                         "(apt-get install xvfb); or use --kinds slices")
    env = dict(os.environ, ESPGRID_VIZ_UNDER_XVFB="1")
    sys.stdout.flush()
    os.execvpe(xvfb, [xvfb, "-a", "-s", "-screen 0 1280x1024x24", sys.executable,
                      os.path.abspath(__file__)] + list(argv), env)


# ------------------------------------------------------------------------------------------------
# The map, as a VTK image with the point array "potential"
# ------------------------------------------------------------------------------------------------

class Map:
    """origin, spacing, dims (nx, ny, nz), values[nx, ny, nz], units, path, vtk image (lazy)."""

    def __init__(self, origin, spacing, dims, values, units, path, image=None):
        self.origin, self.spacing, self.dims = np.asarray(origin), np.asarray(spacing), tuple(dims)
        self.values, self.units, self.path, self._image = values, units, path, image

    @property
    def bounds_lo(self):
        return self.origin

    @property
    def bounds_hi(self):
        return self.origin + self.spacing * (np.array(self.dims) - 1)

    def image(self):
        if self._image is None:
            import vtk
            from vtk.util import numpy_support
            img = vtk.vtkImageData()
            img.SetDimensions(*self.dims)
            img.SetOrigin(*self.origin)
            img.SetSpacing(*self.spacing)
            flat = np.ascontiguousarray(self.values.ravel(order="F"), dtype=np.float32)  # x fastest
            arr = numpy_support.numpy_to_vtk(flat, deep=True)
            arr.SetName("potential")
            img.GetPointData().SetScalars(arr)
            self._image = img
        return self._image


def read_vti(path):
    import vtk
    from vtk.util import numpy_support

    class Errors:
        def __init__(self):
            self.messages = []

        def __call__(self, obj, event, data=None):
            self.messages.append(event)

    # VTK 9.1 aborts the process (uncaught C++ exception) on some truncated files: check the end first.
    with open(path, "rb") as f:
        head = f.read(256)
        f.seek(max(0, os.path.getsize(path) - 64))
        tail = f.read()
    if b"<VTKFile" not in head or b"ImageData" not in head:
        raise InputError(f"{path}: not a VTK XML image data (.vti) file")
    if not tail.rstrip().endswith(b"</VTKFile>"):
        raise InputError(f"{path}: truncated .vti (no closing </VTKFile>)")
    reader = vtk.vtkXMLImageDataReader()
    if not reader.CanReadFile(path):
        raise InputError(f"{path}: not a readable VTK XML image data (.vti) file")
    errs = Errors()
    reader.AddObserver("ErrorEvent", errs)
    reader.GetExecutive().AddObserver("ErrorEvent", errs)
    reader.SetFileName(path)
    reader.Update()
    img = reader.GetOutput()
    if errs.messages or img is None or img.GetNumberOfPoints() == 0:
        raise InputError(f"{path}: could not read the image data (corrupt or truncated .vti?)")
    arr = img.GetPointData().GetArray("potential")
    if arr is None:
        names = [img.GetPointData().GetArrayName(i) for i in range(img.GetPointData().GetNumberOfArrays())]
        raise InputError(f"{path}: no point array named 'potential' (arrays: {', '.join(names) or 'none'})")
    if arr.GetNumberOfComponents() != 1:
        raise InputError(f"{path}: 'potential' has {arr.GetNumberOfComponents()} components, expected 1")
    units = ""
    fd = img.GetFieldData()
    u = fd.GetAbstractArray("units") if fd is not None else None
    if u is not None and u.GetNumberOfTuples() > 0:
        units = str(u.GetVariantValue(0).ToString())
    img.GetPointData().SetActiveScalars("potential")
    dims = img.GetDimensions()
    vals = numpy_support.vtk_to_numpy(arr).astype(np.float64).reshape(dims[::-1]).transpose(2, 1, 0)
    if not np.all(np.isfinite(vals)):
        raise InputError(f"{path}: 'potential' holds NaN or inf values")
    # Keep only the potential in the image used for rendering.
    out = vtk.vtkImageData()
    out.SetDimensions(dims)
    out.SetOrigin(img.GetOrigin())
    out.SetSpacing(img.GetSpacing())
    out.GetPointData().SetScalars(arr)
    return Map(img.GetOrigin(), img.GetSpacing(), dims, vals, units, path, out)


def read_map(path, units=None):
    """The map at `path`, in any format espgrid writes: read by espgrid (`espgrid convert` to an
    uncompressed .vti in a temporary folder: espgrid's readers check its structure, sizes and
    values as for any input), then by VTK from that file."""
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    if not os.path.isfile(path):
        raise InputError(f"{path}: not a file")
    if map_extension(path) is None:
        raise InputError(f"{path}: unknown map format (expected {', '.join(MAP_EXTENSIONS)})")
    import tempfile
    with tempfile.TemporaryDirectory(prefix="espgrid-render-") as tmp:
        vti = os.path.join(tmp, "map.vti")
        map_to_vti(path, vti, units)
        m = read_vti(vti)
    m.path = path
    return m


def to_palette(path):
    try:
        from PIL import Image
    except ImportError:
        raise InputError("--palette needs Pillow (apt-get install python3-pil)")
    with Image.open(path) as im:
        rgb = im.convert("RGB")
    try:   # libimagequant keeps smooth gradients (colour bar, shading); not every Pillow has it
        q = rgb.quantize(colors=256, method=Image.Quantize.LIBIMAGEQUANT, dither=Image.Dither.FLOYDSTEINBERG)
    except (ValueError, OSError):
        q = rgb.quantize(colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.FLOYDSTEINBERG)
    q.save(path, optimize=True)


def nice_ceil(x):
    """Smallest 1, 2, 3 or 5 x 10^n that is >= x (x > 0)."""
    if not x > 0:
        return 1.0
    e = np.floor(np.log10(x))
    for f in (1, 2, 3, 5, 10):
        if f * 10 ** e >= x * (1 - 1e-9):
            return float(f * 10 ** e)
    return float(10 ** (e + 1))


def unit_label(units):
    return f"potential ({units})" if units else "potential"


# ------------------------------------------------------------------------------------------------
# (a) Slices, drawn with matplotlib (no X needed)
# ------------------------------------------------------------------------------------------------

def render_slices(m, st, args, out_png, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LinearSegmentedColormap

    cmap = LinearSegmentedColormap.from_list("espgrid_rdbu", DIVERGING, N=256)
    lim = args.limit
    axes_names = "xyz"
    if args.plane:
        planes = []
        for ax, val in args.plane:
            k = int(round((val - m.origin[ax]) / m.spacing[ax]))
            if not 0 <= k < m.dims[ax]:
                raise InputError(f"--plane {axes_names[ax]}={val:g} is outside the map "
                                 f"({m.bounds_lo[ax]:.3f} to {m.bounds_hi[ax]:.3f} Å)")
            planes.append((ax, k))
    else:
        planes = [(2, m.dims[2] // 2), (1, m.dims[1] // 2), (0, m.dims[0] // 2)]

    w, h = args.size
    fig_w = max(8.0, w / 100.0)            # inches; small pictures keep a readable font size
    dpi = w / fig_w
    n = len(planes)
    fig = plt.figure(figsize=(fig_w, h / dpi), dpi=dpi, facecolor="white", layout="constrained")
    info_lines = [f"grid {m.dims[0]} x {m.dims[1]} x {m.dims[2]}, spacing "
                  + ", ".join(f"{s:g}" for s in m.spacing) + " Å",
                  f"range {m.values.min():.4g} to {m.values.max():.4g} {m.units}".rstrip(),
                  f"colour scale ±{lim:g} {m.units}, clamped".rstrip(),
                  "contours at " + ", ".join(f"{l:g}" for l in sorted(set(args.levels)))]
    if st is not None:
        info_lines.append(f"dots: atoms of {os.path.basename(st.path)} within 1 Å of the plane")
    if n == 3:
        mosaic = fig.subplot_mosaic([["p0", "p1"], ["p2", "info"]])
        plane_axes = [mosaic["p0"], mosaic["p1"], mosaic["p2"]]
        fig.suptitle(title, fontsize=15)
    else:
        ncols = min(n, 3)
        nrows = (n + ncols - 1) // ncols
        grid = fig.subplots(nrows, ncols, squeeze=False)
        plane_axes = list(grid.ravel()[:n])
        for extra in grid.ravel()[n:]:
            extra.axis("off")
        fig.suptitle(title + "\n" + f"range {m.values.min():.4g} to {m.values.max():.4g}, "
                     f"colour scale ±{lim:g} {m.units}".rstrip(), fontsize=12)
    image = None
    for a, (ax, k) in zip(plane_axes, planes):
        u, v = [i for i in range(3) if i != ax]          # in-plane axes, horizontal then vertical
        sl = np.take(m.values, k, axis=ax)                # shape (n_u, n_v)
        pos = m.origin[ax] + k * m.spacing[ax]
        ext = [m.origin[u] - m.spacing[u] / 2, m.bounds_hi[u] + m.spacing[u] / 2,
               m.origin[v] - m.spacing[v] / 2, m.bounds_hi[v] + m.spacing[v] / 2]
        image = a.imshow(sl.T, origin="lower", extent=ext, cmap=cmap, vmin=-lim, vmax=lim,
                         interpolation="bilinear", aspect="equal")
        gu = m.origin[u] + m.spacing[u] * np.arange(m.dims[u])
        gv = m.origin[v] + m.spacing[v] * np.arange(m.dims[v])
        levels = sorted(set(args.levels))
        if sl.min() < max(levels) and sl.max() > min(levels):
            a.contour(gu, gv, sl.T, levels=levels, colors="k", linewidths=0.6)
        if st is not None:
            near = np.abs(st.xyz[:, ax] - pos) <= 1.0
            if near.any():
                a.scatter(st.xyz[near, u], st.xyz[near, v], s=4, c="k", alpha=0.55, linewidths=0)
        a.set_xlabel(f"{axes_names[u]} (Å)")
        a.set_ylabel(f"{axes_names[v]} (Å)")
        a.set_title(f"{axes_names[ax]} = {pos:.2f} Å  (plane {k} of {m.dims[ax]})", fontsize=11)
        a.set_xlim(ext[0], ext[1])
        a.set_ylim(ext[2], ext[3])
    if n == 3:
        info = mosaic["info"]
        info.axis("off")
        info.text(0.0, 0.97, "\n".join([f"map: {os.path.basename(m.path)}"] + info_lines), va="top",
                  ha="left", fontsize=10.5, transform=info.transAxes, linespacing=1.5)
        cax = info.inset_axes([0.04, 0.16, 0.92, 0.08])
        cb = fig.colorbar(image, cax=cax, orientation="horizontal", extend="both")
    else:
        cb = fig.colorbar(image, ax=plane_axes, orientation="horizontal", extend="both",
                          shrink=0.7, aspect=35, pad=0.02)
    cb.set_label(unit_label(m.units) + ":  red < 0 < blue", fontsize=11)
    cb.set_ticks(np.linspace(-lim, lim, 5))
    fig.savefig(out_png, dpi=dpi, facecolor="white")
    plt.close(fig)


# ------------------------------------------------------------------------------------------------
# VTK scene helpers (iso and surface)
# ------------------------------------------------------------------------------------------------

def diverging_ctf(lim):
    import vtk
    ctf = vtk.vtkColorTransferFunction()
    ctf.SetColorSpaceToRGB()
    for i, c in enumerate(DIVERGING):
        ctf.AddRGBPoint(-lim + 2 * lim * i / (len(DIVERGING) - 1), *c)
    ctf.SetClamping(True)
    ctf.SetNanColor(0.6, 0.6, 0.6)
    return ctf


def lut_from_ctf(ctf, lim, n=256):
    import vtk
    lut = vtk.vtkLookupTable()
    lut.SetNumberOfTableValues(n)
    lut.SetRange(-lim, lim)
    for i in range(n):
        c = ctf.GetColor(-lim + 2 * lim * i / (n - 1))
        lut.SetTableValue(i, c[0], c[1], c[2], 1.0)
    lut.SetNanColor(0.6, 0.6, 0.6, 1.0)
    lut.UseBelowRangeColorOn()
    lut.UseAboveRangeColorOn()
    lut.SetBelowRangeColor(*ctf.GetColor(-lim), 1.0)
    lut.SetAboveRangeColor(*ctf.GetColor(lim), 1.0)
    lut.Build()
    return lut


def make_window(size):
    import vtk
    ren = vtk.vtkRenderer()
    ren.SetBackground(1.0, 1.0, 1.0)
    ren.SetUseDepthPeeling(1)
    ren.SetMaximumNumberOfPeels(12)
    ren.SetOcclusionRatio(0.0)
    ren.SetUseFXAA(True)
    rw = vtk.vtkRenderWindow()
    rw.SetOffScreenRendering(1)
    rw.SetAlphaBitPlanes(1)
    rw.SetMultiSamples(0)
    rw.AddRenderer(ren)
    rw.SetSize(*size)
    return ren, rw


def add_text(ren, text, size, pos, fontsize, color=(0, 0, 0), justify="center", bold=False):
    import vtk
    t = vtk.vtkTextActor()
    t.SetInput(text)
    tp = t.GetTextProperty()
    tp.SetFontSize(fontsize)
    tp.SetColor(*color)
    tp.SetBold(bold)
    if justify == "center":
        tp.SetJustificationToCentered()
    elif justify == "right":
        tp.SetJustificationToRight()
    else:
        tp.SetJustificationToLeft()
    tp.SetVerticalJustificationToTop()
    t.SetDisplayPosition(int(pos[0] * size[0]), int(pos[1] * size[1]))
    ren.AddActor2D(t)
    return t


def add_scalar_bar(ren, lut, title, size):
    import vtk
    sb = vtk.vtkScalarBarActor()
    sb.SetLookupTable(lut)
    sb.SetTitle(" ")        # drawn as a separate text above the bar: VTK's own title collides with labels
    sb.SetOrientationToHorizontal()
    sb.SetNumberOfLabels(5)
    sb.SetLabelFormat("%.4g")
    sb.SetPosition(0.2, 0.0)
    sb.SetWidth(0.6)
    sb.SetHeight(0.11)
    sb.SetBarRatio(0.3)
    sb.SetTextPositionToPrecedeScalarBar()
    sb.UnconstrainedFontSizeOn()
    fs = max(10, int(size[1] / 45))
    for tp in (sb.GetTitleTextProperty(), sb.GetLabelTextProperty()):
        tp.SetColor(0, 0, 0)
        tp.SetShadow(0)
        tp.SetItalic(0)
        tp.SetBold(0)
        tp.SetFontSize(fs)
    sb.GetTitleTextProperty().SetFontSize(int(fs * 1.1))
    sb.DrawAnnotationsOff()
    sb.SetMaximumNumberOfColors(256)
    ren.AddActor2D(sb)
    t = vtk.vtkTextActor()
    t.SetInput(title)
    tp = t.GetTextProperty()
    tp.SetFontSize(int(fs * 1.1))
    tp.SetColor(0, 0, 0)
    tp.SetJustificationToCentered()
    tp.SetVerticalJustificationToBottom()
    t.SetDisplayPosition(int(0.5 * size[0]), int(0.115 * size[1]))
    ren.AddActor2D(t)
    return sb


def camera_axes(points, view):
    """(view direction, up) so the largest extent is horizontal and the thinnest faces the viewer."""
    if view != "auto":
        ax = "xyz".index(view[1])
        d = np.zeros(3)
        d[ax] = 1.0 if view[0] == "+" else -1.0
        up = np.zeros(3)
        up[2 if ax != 2 else 1] = 1.0
        return d, up
    pts = np.asarray(points, float)
    if len(pts) < 3:
        return np.array([0.0, 0.0, -1.0]), np.array([0.0, 1.0, 0.0])
    c = pts - pts.mean(axis=0)
    w, v = np.linalg.eigh(c.T @ c)          # ascending eigenvalues
    d, up = v[:, 0], v[:, 1]
    # Deterministic signs: look "down" the thin axis from its positive side; up points to +y-ish.
    if d[np.argmax(np.abs(d))] > 0:
        d = -d
    if up[np.argmax(np.abs(up))] < 0:
        up = -up
    return d, up


def set_camera(ren, center, radius_xy, view_dir, up, size, fill=0.80):
    cam = ren.GetActiveCamera()
    cam.SetFocalPoint(*center)
    dist = 4.0 * max(radius_xy)
    cam.SetPosition(*(np.asarray(center) - view_dir * dist))
    cam.SetViewUp(*up)
    cam.SetViewAngle(30.0)
    # Fit the projected half-extents (horizontal, vertical) into the frame.
    hw, hh = radius_xy
    aspect = size[0] / size[1]
    half_h = max(hh, hw / aspect) / fill
    cam.SetViewAngle(2 * np.degrees(np.arctan(half_h / dist)))
    ren.ResetCameraClippingRange()


def fit_view(ren, points, view, size, fill=0.78, vshift=0.0, axes_points=None):
    """Point the camera along camera_axes(axes_points or points) and fit all points in the frame."""
    pts = np.asarray(points, float)
    d, up = camera_axes(pts if axes_points is None else axes_points, view)
    right = np.cross(d, up)
    right /= np.linalg.norm(right)
    up = np.cross(right, d)
    lo_h, hi_h = (pts @ right).min(), (pts @ right).max()
    lo_v, hi_v = (pts @ up).min(), (pts @ up).max()
    center3 = pts.mean(axis=0)
    center = center3 + right * ((lo_h + hi_h) / 2 - center3 @ right) + up * ((lo_v + hi_v) / 2 - center3 @ up)
    center = center - up * vshift * (hi_v - lo_v)
    set_camera(ren, center, ((hi_h - lo_h) / 2, (hi_v - lo_v) / 2 * (1 + 2 * abs(vshift))), d, up, size, fill)


def write_png(rw, path):
    import vtk
    rw.Render()
    w2i = vtk.vtkWindowToImageFilter()
    w2i.SetInput(rw)
    w2i.SetInputBufferTypeToRGB()
    w2i.ReadFrontBufferOff()
    w2i.Update()
    wr = vtk.vtkPNGWriter()
    wr.SetFileName(path)
    wr.SetCompressionLevel(9)
    wr.SetInputConnection(w2i.GetOutputPort())
    wr.Write()
    if not os.path.isfile(path) or os.path.getsize(path) == 0:
        raise InputError(f"{path}: could not write the picture")


def atom_polydata(st, scale):
    import vtk
    from vtk.util import numpy_support
    r = st.radius.copy()
    fallback = np.array([1.0 if e == "H" else 1.5 for e in st.element])
    r = np.where(r > 0.05, r, fallback) * scale
    pts = vtk.vtkPoints()
    pts.SetData(numpy_support.numpy_to_vtk(np.ascontiguousarray(st.xyz, dtype=np.float64), deep=True))
    pd = vtk.vtkPolyData()
    pd.SetPoints(pts)
    rad = numpy_support.numpy_to_vtk(np.ascontiguousarray(r), deep=True)
    rad.SetName("radius")
    pd.GetPointData().SetScalars(rad)
    return pd


def spheres_actor(st, scale):
    import vtk
    pd = atom_polydata(st, scale)
    src = vtk.vtkSphereSource()
    src.SetRadius(1.0)
    nres = 12 if len(st) > 20000 else 16
    src.SetThetaResolution(nres)
    src.SetPhiResolution(nres)
    g = vtk.vtkGlyph3D()
    g.SetInputData(pd)
    g.SetSourceConnection(src.GetOutputPort())
    g.SetScaleModeToScaleByScalar()
    g.SetScaleFactor(1.0)
    g.SetColorModeToColorByScale()
    m = vtk.vtkPolyDataMapper()
    m.SetInputConnection(g.GetOutputPort())
    m.ScalarVisibilityOff()
    a = vtk.vtkActor()
    a.SetMapper(m)
    a.GetProperty().SetColor(*ATOM_COLOR)
    a.GetProperty().SetSpecular(0.2)
    return a


COVALENT = {"H": 0.31, "C": 0.76, "N": 0.71, "O": 0.66, "S": 1.05, "P": 1.07, "F": 0.57,
            "Cl": 1.02, "Br": 1.20, "I": 1.39}


def sticks_actor(st):
    import vtk
    from vtk.util import numpy_support
    xyz = st.xyz
    cov = np.array([COVALENT.get(e, 0.9) for e in st.element])
    # Cell hashing: bonds between atoms closer than 1.15 x the sum of covalent radii.
    cell = 2.6
    keys = np.floor(xyz / cell).astype(np.int64)
    buckets = {}
    for i, k in enumerate(map(tuple, keys)):
        buckets.setdefault(k, []).append(i)
    lines = []
    offsets = [(a, b, c) for a in (-1, 0, 1) for b in (-1, 0, 1) for c in (-1, 0, 1)]
    for k, members in buckets.items():
        cand = []
        for o in offsets:
            cand.extend(buckets.get((k[0] + o[0], k[1] + o[1], k[2] + o[2]), ()))
        cand = np.array(cand)
        for i in members:
            j = cand[cand > i]
            if j.size == 0:
                continue
            d = np.linalg.norm(xyz[j] - xyz[i], axis=1)
            ok = j[(d > 0.4) & (d < 1.15 * (cov[i] + cov[j]))]
            lines.extend((i, jj) for jj in ok)
    pts = vtk.vtkPoints()
    pts.SetData(numpy_support.numpy_to_vtk(np.ascontiguousarray(xyz, dtype=np.float64), deep=True))
    ca = vtk.vtkCellArray()
    for i, j in lines:
        ca.InsertNextCell(2)
        ca.InsertCellPoint(int(i))
        ca.InsertCellPoint(int(j))
    pd = vtk.vtkPolyData()
    pd.SetPoints(pts)
    pd.SetLines(ca)
    tube = vtk.vtkTubeFilter()
    tube.SetInputData(pd)
    tube.SetRadius(0.18)
    tube.SetNumberOfSides(8)
    tube.CappingOn()
    m = vtk.vtkPolyDataMapper()
    m.SetInputConnection(tube.GetOutputPort())
    m.ScalarVisibilityOff()
    a = vtk.vtkActor()
    a.SetMapper(m)
    a.GetProperty().SetColor(*ATOM_COLOR)
    return a


def outline_actor(m):
    import vtk
    o = vtk.vtkOutlineFilter()
    o.SetInputData(m.image())
    mp = vtk.vtkPolyDataMapper()
    mp.SetInputConnection(o.GetOutputPort())
    a = vtk.vtkActor()
    a.SetMapper(mp)
    a.GetProperty().SetColor(0.55, 0.55, 0.55)
    a.GetProperty().SetLineWidth(1.5)
    return a


# ------------------------------------------------------------------------------------------------
# (b) Isosurfaces
# ------------------------------------------------------------------------------------------------

def render_iso(m, st, args, out_png, title):
    import vtk
    from vtk.util import numpy_support
    ren, rw = make_window(args.size)
    vmin, vmax = float(m.values.min()), float(m.values.max())
    legend, pts_for_view, clipped = [], [], False
    levels = sorted(set(args.levels))
    for lev in levels:
        color = NEG_COLOR if lev < 0 else POS_COLOR if lev > 0 else (0.5, 0.5, 0.5)
        if not vmin < lev < vmax:
            legend.append((f"{lev:+g} {m.units}: none in the map".replace("  ", " "), color))
            continue
        fe = vtk.vtkFlyingEdges3D()
        fe.SetInputData(m.image())
        fe.SetValue(0, lev)
        fe.ComputeNormalsOn()
        fe.ComputeScalarsOff()
        fe.Update()
        surf = fe.GetOutput()
        if surf.GetNumberOfPoints() == 0:
            legend.append((f"{lev:+g} {m.units}: none", color))
            continue
        sp = numpy_support.vtk_to_numpy(surf.GetPoints().GetData())
        pts_for_view.append(sp)
        tol = 1e-3 * m.spacing.min()
        if np.any(sp <= m.bounds_lo + tol) or np.any(sp >= m.bounds_hi - tol):
            clipped = True
        mp = vtk.vtkPolyDataMapper()
        mp.SetInputData(surf)
        mp.ScalarVisibilityOff()
        a = vtk.vtkActor()
        a.SetMapper(mp)
        pr = a.GetProperty()
        pr.SetColor(*color)
        pr.SetOpacity(0.45)
        pr.SetSpecular(0.3)
        pr.SetSpecularPower(20)
        pr.BackfaceCullingOff()
        ren.AddActor(a)
        legend.append((f"{lev:+g} {m.units}".rstrip(), color))
    if st is not None and args.atoms != "none":
        shown = st if args.hydrogens else st.subset([e != "H" for e in st.element])
        if len(shown):
            ren.AddActor(spheres_actor(shown, args.atom_scale) if args.atoms == "spheres"
                         else sticks_actor(shown))
    if st is not None:
        view_pts = st.xyz
    else:
        ren.AddActor(outline_actor(m))
        lo, hi = m.bounds_lo, m.bounds_hi
        view_pts = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
    # Frame the molecule and whatever isosurface lies around it (clipped to the map box).
    fit_view(ren, np.vstack([view_pts] + pts_for_view), args.view, args.size, fill=0.80, vshift=-0.02,
             axes_points=view_pts)
    size = args.size
    fs = max(10, size[1] // 40)
    add_text(ren, title, size, (0.5, 0.985), int(fs * 1.25), bold=True)
    # Legend: one row at the bottom, each level in its own colour.
    row = [("isosurfaces:", (0, 0, 0))] + legend
    x = 0.02
    for text, color in row:
        add_text(ren, text, size, (x, 0.075), fs, color=color, justify="left")
        x += (len(text) + 2) * 0.55 * fs / size[0]
    notes = []
    if st is not None and args.atoms != "none":
        notes.append(f"{'atoms' if args.hydrogens else 'heavy atoms'} of {os.path.basename(st.path)}: "
                     + (f"spheres, radius x {args.atom_scale:g}" if args.atoms == "spheres" else "sticks"))
    if clipped:
        notes.append("surfaces end at the map's box")
    if st is None:
        notes.append("grey box: map extent")
    if notes:
        add_text(ren, "; ".join(notes), size, (0.02, 0.035), int(fs * 0.85), color=(0.35, 0.35, 0.35),
                 justify="left")
    write_png(rw, out_png)


# ------------------------------------------------------------------------------------------------
# (c) Molecular surface coloured by potential
# ------------------------------------------------------------------------------------------------

def gaussian_inside(st, probe, h, alpha=2.0, cutoff=2.6):
    """f(x) = sum_i exp(-alpha (|x - c_i|^2 / R_i^2 - 1)); the surface is f = 1. R_i = r_i + probe.

    Zero-radius atoms (hydrogens in some force fields) are skipped. Returns (f, origin, dims)."""
    r = st.radius + probe
    use = st.radius > 0.05
    if not use.any():
        r = np.where(np.array([e == "H" for e in st.element]), 1.2, 1.7) + probe
        use = np.ones(len(st), bool)
    c, R = st.xyz[use], r[use]
    pad = cutoff * R.max() + 2 * h
    lo = c.min(axis=0) - pad
    hi = c.max(axis=0) + pad
    dims = np.ceil((hi - lo) / h).astype(int) + 1
    if np.prod(dims) > 60_000_000:
        raise InputError(f"surface grid {dims[0]}x{dims[1]}x{dims[2]} is too large; "
                         f"use a larger --surface-spacing")
    f = np.zeros(dims, dtype=np.float32)
    for ci, Ri in zip(c, R):
        rc = cutoff * Ri
        i0 = np.maximum(np.floor((ci - rc - lo) / h).astype(int), 0)
        i1 = np.minimum(np.ceil((ci + rc - lo) / h).astype(int) + 1, dims)
        gx = lo[0] + h * np.arange(i0[0], i1[0]) - ci[0]
        gy = lo[1] + h * np.arange(i0[1], i1[1]) - ci[1]
        gz = lo[2] + h * np.arange(i0[2], i1[2]) - ci[2]
        d2 = gx[:, None, None] ** 2 + gy[None, :, None] ** 2 + gz[None, None, :] ** 2
        f[i0[0]:i1[0], i0[1]:i1[1], i0[2]:i1[2]] += np.exp(-alpha * (d2 / (Ri * Ri) - 1.0)).astype(np.float32)
    return f, lo, dims


def molecular_surface(st, probe, h):
    import vtk
    from vtk.util import numpy_support
    f, lo, dims = gaussian_inside(st, probe, h)
    img = vtk.vtkImageData()
    img.SetDimensions(*[int(d) for d in dims])
    img.SetOrigin(*lo)
    img.SetSpacing(h, h, h)
    arr = numpy_support.numpy_to_vtk(np.ascontiguousarray(f.ravel(order="F")), deep=True)
    arr.SetName("inside")
    img.GetPointData().SetScalars(arr)
    fe = vtk.vtkFlyingEdges3D()
    fe.SetInputData(img)
    fe.SetValue(0, 1.0)
    fe.ComputeNormalsOff()
    fe.ComputeScalarsOff()
    fe.Update()
    # Keep the outer shell only (drops internal cavities, which no one can see).
    conn = vtk.vtkPolyDataConnectivityFilter()
    conn.SetInputConnection(fe.GetOutputPort())
    conn.SetExtractionModeToLargestRegion()
    sm = vtk.vtkWindowedSincPolyDataFilter()
    sm.SetInputConnection(conn.GetOutputPort())
    sm.SetNumberOfIterations(15)
    sm.SetPassBand(0.1)
    sm.NormalizeCoordinatesOn()
    sm.BoundarySmoothingOff()
    sm.FeatureEdgeSmoothingOff()
    nrm = vtk.vtkPolyDataNormals()
    nrm.SetInputConnection(sm.GetOutputPort())
    nrm.ComputePointNormalsOn()
    nrm.ComputeCellNormalsOff()
    nrm.SplittingOff()
    nrm.ConsistencyOn()
    nrm.AutoOrientNormalsOn()   # outward for a closed surface
    nrm.Update()
    out = vtk.vtkPolyData()
    out.DeepCopy(nrm.GetOutput())
    return out


def sample_outside(m, surf, offset):
    """Potential at p + offset * n for every surface point p (n the outward normal); NaN where the
    sample lies outside the map."""
    import vtk
    from vtk.util import numpy_support
    p = numpy_support.vtk_to_numpy(surf.GetPoints().GetData()).astype(np.float64)
    n = numpy_support.vtk_to_numpy(surf.GetPointData().GetNormals()).astype(np.float64)
    q = p + offset * n
    pts = vtk.vtkPoints()
    pts.SetData(numpy_support.numpy_to_vtk(np.ascontiguousarray(q), deep=True))
    probe_in = vtk.vtkPolyData()
    probe_in.SetPoints(pts)
    pr = vtk.vtkProbeFilter()
    pr.SetInputData(probe_in)
    pr.SetSourceData(m.image())
    pr.Update()
    out = pr.GetOutput()
    vals = numpy_support.vtk_to_numpy(out.GetPointData().GetArray("potential")).astype(np.float64)
    mask = numpy_support.vtk_to_numpy(out.GetPointData().GetArray(pr.GetValidPointMaskArrayName()))
    vals = np.where(mask.astype(bool), vals, np.nan)
    return vals


def surface_with_potential(m, st, args):
    """The molecular surface (vtkPolyData) and the potential sampled --offset outside it."""
    surf = molecular_surface(st, args.probe, args.surface_spacing)
    if surf.GetNumberOfPoints() == 0:
        raise InputError("the molecular surface is empty (atom radii all zero?)")
    return surf, sample_outside(m, surf, args.offset)


def render_surface(m, st, args, out_png, title, surf, vals):
    import vtk
    from vtk.util import numpy_support
    good = np.isfinite(vals)
    lim = args.limit
    stats = {}
    if good.any():
        v = vals[good]
        stats = dict(lo=v.min(), hi=v.max(), clamped=float(np.mean(np.abs(v) > lim)))
    arr = numpy_support.numpy_to_vtk(np.ascontiguousarray(vals, dtype=np.float32), deep=True)
    arr.SetName("potential")
    surf.GetPointData().SetScalars(arr)
    ren, rw = make_window(args.size)
    ctf = diverging_ctf(lim)
    lut = lut_from_ctf(ctf, lim)
    mp = vtk.vtkPolyDataMapper()
    mp.SetInputData(surf)
    mp.SetLookupTable(lut)
    mp.SetScalarRange(-lim, lim)
    mp.SetScalarModeToUsePointData()
    mp.InterpolateScalarsBeforeMappingOn()
    mp.ScalarVisibilityOn()
    a = vtk.vtkActor()
    a.SetMapper(mp)
    pr = a.GetProperty()
    pr.SetAmbient(0.25)
    pr.SetDiffuse(0.80)
    pr.SetSpecular(0.15)
    pr.SetSpecularPower(25)
    ren.AddActor(a)
    pts = numpy_support.vtk_to_numpy(surf.GetPoints().GetData())
    # The atoms' principal axes choose the view, as in the isosurface picture.
    fit_view(ren, np.vstack([st.xyz, pts]), args.view, args.size, fill=0.74, vshift=0.06, axes_points=st.xyz)
    size = args.size
    fs = max(10, size[1] // 40)
    add_text(ren, title, size, (0.5, 0.985), int(fs * 1.25), bold=True)
    kind = "solvent-accessible" if args.probe > 0 else "molecular"
    sub = f"{kind} surface coloured by the potential {args.offset:g} \u00c5 outside it"
    add_text(ren, sub, size, (0.5, 0.935), fs, color=(0.2, 0.2, 0.2))
    if stats:
        note = (f"surface values {stats['lo']:.4g} to {stats['hi']:.4g} {m.units}; "
                f"{100 * stats['clamped']:.0f}% beyond \u00b1{lim:g}").strip()
        add_text(ren, note, size, (0.02, 0.19), int(fs * 0.85), color=(0.3, 0.3, 0.3), justify="left")
    if not good.all():
        add_text(ren, f"grey: outside the map ({100 * (1 - good.mean()):.0f}% of the surface)", size,
                 (0.98, 0.19), int(fs * 0.85), color=(0.4, 0.4, 0.4), justify="right")
    add_scalar_bar(ren, lut, unit_label(m.units), size)
    write_png(rw, out_png)
    return stats, float(1 - good.mean()) if len(good) else 1.0


# ------------------------------------------------------------------------------------------------

def main(argv):
    args = parse_args(argv)
    if not os.path.exists(args.map):
        raise InputError(f"{args.map}: no such file")
    if args.structure and not os.path.exists(args.structure):
        raise InputError(f"{args.structure}: no such file")
    if map_extension(args.map) is None:
        raise InputError(f"{args.map}: unknown map format '{os.path.splitext(args.map)[1]}' "
                         f"(expected {', '.join(MAP_EXTENSIONS)})")
    if args.structure and os.path.splitext(args.structure)[1].lower() not in (".pqr", ".xyz", ".extxyz"):
        raise InputError(f"{args.structure}: unknown structure format "
                         f"'{os.path.splitext(args.structure)[1]}' (expected .pqr, .xyz or .extxyz)")
    if "surface" in args.kinds and not args.structure:
        if args.kinds_explicit:
            raise InputError("--kinds surface needs --structure (the atoms define the surface)")
        args.kinds.remove("surface")
    if any(k in args.kinds for k in ("iso", "surface")):
        ensure_display(argv)
    if not args.structure and not args.kinds_explicit:
        print("note: no --structure, so no surface picture", file=sys.stderr)
    if args.espgrid:
        set_espgrid(args.espgrid)
    st = read_structure(args.structure) if args.structure else None
    m = read_map(args.map, args.units)
    prefix = args.out if args.out else args.map[:len(args.map) - len(map_extension(args.map))]
    outdir = os.path.dirname(prefix)
    if outdir and not os.path.isdir(outdir):
        try:
            os.makedirs(outdir, exist_ok=True)
        except OSError as e:
            raise InputError(f"{outdir}: cannot create the output directory ({e.strerror})")
    title = args.title if args.title is not None else os.path.basename(args.map)
    if st is not None:
        lo, hi = m.bounds_lo - 1e-6, m.bounds_hi + 1e-6
        inside = np.all((st.xyz >= lo) & (st.xyz <= hi), axis=1)
        if not inside.any():
            raise InputError(f"{st.path}: no atom lies inside the map's box — wrong structure for this map?")
        if not inside.all():
            print(f"note: {np.count_nonzero(~inside)} of {len(st)} atoms lie outside the map", file=sys.stderr)
    print(f"map        {m.path}: {m.dims[0]} x {m.dims[1]} x {m.dims[2]}, range "
          f"{m.values.min():.4g} to {m.values.max():.4g} {m.units or '(units not given)'}")
    if st is not None:
        print(f"structure  {st.path}: {len(st)} atoms, total charge {st.charge.sum():+.4f} e")
    surf = vals = None
    if st is not None and ("surface" in args.kinds or args.limit == "auto"):
        surf, vals = surface_with_potential(m, st, args)
    if args.limit == "auto":
        if vals is not None and np.isfinite(vals).any():
            sample, where = np.abs(vals[np.isfinite(vals)]), f"{args.offset:g} Å outside the surface"
        else:
            sample, where = np.abs(m.values.ravel()), "in the map"
        args.limit = nice_ceil(np.percentile(sample, 95))
        print(f"limit      auto: ±{args.limit:g} {m.units} (95th percentile of |potential| {where})")
    if args.levels == "auto":
        args.levels = [-args.limit, args.limit]
        print(f"levels     auto: {args.levels[0]:g}, {args.levels[1]:g} {m.units}")
    for kind in args.kinds:
        out_png = f"{prefix}-{kind}.png"
        if kind == "slices":
            render_slices(m, st, args, out_png, title)
        elif kind == "iso":
            render_iso(m, st, args, out_png, title)
        else:
            stats, outside = render_surface(m, st, args, out_png, title, surf, vals)
            if stats and stats["clamped"] > 0.5:
                print(f"note: {100 * stats['clamped']:.0f}% of the surface is beyond ±{args.limit:g} "
                      f"{m.units} (values {stats['lo']:.3g} to {stats['hi']:.3g}); a bare Coulomb sum "
                      f"(dielectric 1) is far larger than a screened APBS map: try --limit auto, "
                      f"or map with --dielectric 80", file=sys.stderr)
        if args.palette:
            to_palette(out_png)
        print(f"wrote      {out_png}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except InputError as e:
        print(f"render_potential: error: {e}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
