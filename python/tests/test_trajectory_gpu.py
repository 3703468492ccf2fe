"""Trajectory averages on a GPU: maps summed on the device against the same maps summed
on the host, and PB frames through the pooled device buffers against fresh solves. Skipped
without a usable CUDA device; ESPGRID_REQUIRE_GPU=1 makes that a failure (conftest.py).
"""

import os
import warnings

import numpy as np
import pytest

import espgrid
from conftest import ROOT, require_gpu

mda = pytest.importorskip("MDAnalysis")
warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", category=UserWarning)

DATA = os.path.join(ROOT, "tests", "data", "mdanalysis")
ADK_PSF, ADK_DCD = os.path.join(DATA, "adk.psf.gz"), os.path.join(DATA, "adk_dims_head.dcd")


def adk_frames():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        u = mda.Universe(ADK_PSF, ADK_DCD)
        return u, [ts.positions.astype(np.float64) for ts in u.trajectory]


@pytest.mark.parametrize("kernel", ["cuda-dualpipe", "cuda-unrolled"])
def test_maps_summed_on_the_device_equal_the_same_maps_summed_on_the_host(kernel):
    require_gpu()
    u, frames = adk_frames()
    q = np.asarray(u.atoms.charges, np.float64)
    grid = espgrid.grid_around(np.vstack(frames), spacing=1.0)
    options = espgrid._with_grid(grid, {"kernel": kernel})
    on_device = espgrid.FrameAverage(espgrid.map_options(**options), grid, q, True, "device")
    # Two workers on one device share each map's planes: no workspace, so the maps come back and
    # are summed on the host; a deterministic kernel's map is the same bits either way.
    on_host = espgrid.FrameAverage(espgrid.map_options(**options, devices="0,0"), grid, q, True, "host")
    assert on_device.sums_on_device and not on_host.sums_on_device
    for k in range(12):  # the 3 frames, 4 times each: the sums grow past one frame's
        for engine in (on_device, on_host):
            engine.add_frame(frames[k % 3], f"frame {k}")
    for engine in (on_device, on_host):
        engine.finish()
    assert on_device.frames == on_host.frames == 12
    assert np.array_equal(on_device.limbs, on_host.limbs)  # the integers themselves
    assert np.array_equal(on_device.mean().values, on_host.mean().values)
    assert np.array_equal(on_device.deviation().values, on_host.deviation().values)
    # And against numpy: a float32 step.
    stack = np.stack([np.asarray(espgrid.compute_map(f, q, grid=grid, kernel=kernel).values, np.float64)
                      for f in frames])
    np.testing.assert_allclose(on_device.mean().values, stack.mean(axis=0), rtol=2.0 ** -23, atol=0)


def test_pb_frames_with_pooled_device_buffers_equal_fresh_solves():
    require_gpu()
    from espgrid.radii import assign_radii
    u, frames = adk_frames()
    result = espgrid.average_map(ADK_PSF, ADK_DCD, model="pb", backend="cuda", std=True, spacing=1.5,
                                 progress=False)
    radii = assign_radii(u.atoms).radii
    q = np.asarray(u.atoms.charges, np.float64)
    stack = np.stack([np.asarray(espgrid.compute_map(f, q, radii=radii, model="pb", backend="cuda",
                                                     grid=result.mean.grid).values, np.float64) for f in frames])
    # The same solves (the pool hands back buffers, the arithmetic is the same): one float32 step.
    np.testing.assert_allclose(result.mean.values, stack.mean(axis=0), rtol=2.0 ** -23, atol=0)
    assert "CUDA" in result.solve
