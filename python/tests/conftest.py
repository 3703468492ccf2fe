"""Shared set-up for the Python module's tests (run: /usr/bin/python3 -m pytest python/tests).

The module is imported from PYTHONPATH (ctest sets it to build/python) or else from the
repository's build/python; the espgrid program is $ESPGRID or build/espgrid. Tests that need
a GPU skip without one, and fail with ESPGRID_REQUIRE_GPU=1, like the C++ suites.
"""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

try:
    import espgrid  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(ROOT, "build", "python"))
    import espgrid  # noqa: F401,E402

ESPGRID = os.environ.get("ESPGRID") or os.path.join(ROOT, "build", "espgrid")


def run_cli(*args, cwd=ROOT):
    """Runs the espgrid program; returns the CompletedProcess (text)."""
    return subprocess.run([ESPGRID, *map(str, args)], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, stdin=subprocess.DEVNULL)


def require_gpu():
    """Skips without a usable CUDA device, or fails when ESPGRID_REQUIRE_GPU=1."""
    ok, reason = espgrid.cuda_available()
    if not ok:
        if os.environ.get("ESPGRID_REQUIRE_GPU") == "1":
            pytest.fail(f"ESPGRID_REQUIRE_GPU=1 but {reason}")
        pytest.skip(f"no usable CUDA device: {reason}")


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture(scope="session")
def root():
    return ROOT


def pytest_sessionfinish(session, exitstatus):
    # A file whose every test skipped reports 77, which ctest shows as "Skipped" (not "Passed").
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if exitstatus == 0 and reporter is not None:
        stats = reporter.stats
        if stats.get("skipped") and not stats.get("passed") and not stats.get("failed"):
            session.exitstatus = 77
