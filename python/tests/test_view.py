"""Map.view (python/espgrid/view.py): the `espgrid view` page from Python, and its notebook
display. The page itself in a browser: tests/browser/test_view_page.mjs."""

import json
import os
import re

import pytest

import espgrid
from conftest import ROOT, run_cli

FAS = os.path.join(ROOT, "data", "fasciculin2.pqr")
SCREENED = dict(model="debye", dielectric=78.54, ionic_strength=0.15)


def page_data(html):
    """The page's JSON block."""
    return json.loads(re.search(r'<script type="application/json" id="espgrid-data">(.*?)</script>', html, re.S).group(1))


@pytest.fixture(scope="module")
def fas_map():
    return espgrid.compute_map(FAS, spacing=1.0, backend="cpu", **SCREENED)


def view_or_skip(phi, *args, **kwargs):
    try:
        return phi.view(*args, **kwargs)
    except espgrid.Error as e:
        if "not installed" in str(e):
            pytest.skip(f"this build has no viewer library: {str(e).splitlines()[0]}")
        raise


def test_view_writes_the_programs_page(fas_map, tmp_path):
    page = view_or_skip(fas_map, FAS, tmp_path / "fas.html")
    assert page.path == str(tmp_path / "fas.html")
    assert open(page.path, encoding="utf-8").read() == page.html
    assert "exact direct sum over 906 atoms" in page.info["values"]
    assert page.info["units"] == "kT/e" and page.info["limit"] == 5
    # The same map written and viewed by the program gives the same scene (the page differs
    # only in its date line and the map's file name).
    fas_map.write(str(tmp_path / "fas.dx"))
    r = run_cli("view", FAS, tmp_path / "fas.dx", "-o", tmp_path / "cli.html")
    assert r.returncode == 0, r.stderr
    ours, theirs = page_data(page.html), page_data(open(tmp_path / "cli.html", encoding="utf-8").read())
    for key in ("units", "limit", "offset", "surface", "isosurfaces", "atoms", "camera"):
        assert ours[key] == theirs[key], key
    assert re.search(r'id="espgrid-blob-surface">([^<]*)<', page.html).group(1) == \
        re.search(r'id="espgrid-blob-surface">([^<]*)<', open(tmp_path / "cli.html", encoding="utf-8").read()).group(1)


def test_notebook_display_and_options(fas_map):
    page = view_or_skip(fas_map, espgrid.read_structure(FAS), limit="auto", levels=[-2, 2], values="map", title="Fas")
    assert page.path is None
    shown = page._repr_html_()
    assert shown.startswith("<iframe") and 'srcdoc="' in shown
    assert "<script" not in shown.split('srcdoc="', 1)[1], "the page must be escaped inside srcdoc"
    data = page_data(page.html)
    assert data["title"] == "Fas" and data["limit"] == 2
    assert [i["level"] for i in data["isosurfaces"]] == [-2, 2]
    assert page.info["values"] == "trilinear interpolation of the map (asked for)"
    assert "espgrid.View" in repr(page)


def test_refusals(fas_map, tmp_path):
    with pytest.raises(espgrid.UsageError, match="name it NAME.html"):
        fas_map.view(FAS, tmp_path / "fas.png")
    with pytest.raises(espgrid.UsageError, match="--values must be"):
        fas_map.view(FAS, values="guess")
    with pytest.raises(espgrid.UsageError, match="limit"):
        fas_map.view(FAS, limit="big")
    with pytest.raises(espgrid.UsageError, match="--view must be"):
        fas_map.view(FAS, view="top")
    assert os.listdir(tmp_path) == []
