"""`cmake --install` and the README's examples, as written, against what it installed.

The build (the one $ESPGRID belongs to) is installed into a fresh temporary prefix; every
example line of README.md's ```sh and ```python blocks then runs with that prefix's bin/ first
on the PATH and its Python folder on PYTHONPATH, from a scratch folder that links the
repository's data/, python/ and viz/ (the examples are written for the repository root).

Lines that need what this machine may lack are skipped with the reason: a GPU (--backend cuda,
--devices, cuda- kernels), MPI (mpirun not installed; as root the two variables the README
names for root are set), or minutes of CPU
time (the actin dimer and AChBP maps; ESPGRID_README_ALL=1 runs them). The `bash scripts/...`
lines (install packages, build, test) are what CI itself runs, so they are not repeated here.
"""

import os
import re
import shutil
import subprocess
import sys

import pytest

import espgrid
from conftest import ESPGRID, ROOT


def readme_examples():
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    examples = []
    for lang, body in re.findall(r"```(sh|python)\n(.*?)```", text, re.S):
        if lang == "python":
            examples.append(("python", body))
            continue
        for line in body.splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                examples.append(("sh", line))
    return examples


def writes_vti():
    try:
        espgrid._espgrid.check_output_paths([os.path.join(ROOT, "probe.vti")])
        return True
    except espgrid.UsageError:
        return False


def why_skip(kind, line):
    if kind == "sh" and line.startswith("bash scripts/"):
        return "CI runs the scripts themselves"
    if ".vti" in line and not writes_vti():
        return "this build writes no .vti (built without VTK)"
    if "mpirun" in line and shutil.which("mpirun") is None:
        return "needs MPI (mpirun is not installed)"
    if re.search(r"--backend cuda|--devices|--kernel cuda-|--require-cuda", line):
        ok, reason = espgrid.cuda_available()
        if not ok:
            return f"needs a GPU ({reason})"
        if "--device 1" in line and subprocess.run(["nvidia-smi", "-L"], stdout=subprocess.PIPE,
                                                   text=True).stdout.count("GPU ") < 2:
            return "needs a second GPU (--device 1)"
    elif re.search(r"actin_dimer|achbp|big\.pqr", line) and os.environ.get("ESPGRID_README_ALL") != "1":
        return "minutes of CPU time (ESPGRID_README_ALL=1 runs it)"
    return None


EXAMPLES = readme_examples()


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    build = os.path.dirname(os.path.abspath(ESPGRID))
    prefix = tmp_path_factory.mktemp("prefix")
    r = subprocess.run(["cmake", "--install", build, "--prefix", str(prefix)], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 0, r.stdout
    packages = [os.path.dirname(p) for p, _, files in os.walk(prefix)
                for f in files if f == "__init__.py" and p.endswith(os.path.join("", "espgrid"))]
    assert len(packages) == 1, f"the package should be installed once, found {packages}"
    scratch = tmp_path_factory.mktemp("scratch")
    for folder in ("data", "python", "viz", "tests"):  # tests/data: the README's trajectory examples
        os.symlink(os.path.join(ROOT, folder), scratch / folder)
    env = dict(os.environ, PATH=f"{prefix}/bin:{os.environ.get('PATH', '')}", PYTHONPATH=packages[0])
    env.pop("ESPGRID", None)  # the installed program, not the build tree's
    return dict(prefix=str(prefix), site=packages[0], scratch=str(scratch), env=env)


def test_install_layout(installed):
    prefix = installed["prefix"]
    for program in ("espgrid", "espgrid-trajectory", "espgrid-render"):
        path = os.path.join(prefix, "bin", program)
        assert os.access(path, os.X_OK), f"{program} not installed"
    for name in ("render_potential.py", "espgrid_io.py"):
        assert os.path.isfile(os.path.join(prefix, "share", "espgrid", "viz", name))
    # `espgrid view`'s page and script, and the viewer library where the build could bundle it.
    web = os.path.join(prefix, "share", "espgrid", "web")
    for name in ("page.html", "viewer.js"):
        assert os.path.isfile(os.path.join(web, name))
    assert os.path.isfile(os.path.join(web, "3Dmol-min.js")) or os.path.isfile(os.path.join(web, "unavailable.txt"))
    # With the default prefix /usr/local the package lands in a folder on /usr/bin/python3's path.
    relative = os.path.relpath(installed["site"], prefix)
    default = os.path.join("/usr/local", relative)
    r = subprocess.run(["/usr/bin/python3", "-c", "import sys; print('\\n'.join(sys.path))"], stdout=subprocess.PIPE,
                       text=True)
    assert default in r.stdout.splitlines(), f"{default} is not on /usr/bin/python3's sys.path"
    # What runs is what was installed.
    env, scratch = installed["env"], installed["scratch"]
    assert shutil.which("espgrid", path=env["PATH"]) == os.path.join(prefix, "bin", "espgrid")
    r = subprocess.run(["/usr/bin/python3", "-c", "import espgrid; print(espgrid.__file__)"], env=env, cwd=scratch,
                       stdout=subprocess.PIPE, text=True)
    assert r.stdout.strip().startswith(installed["site"])
    r = subprocess.run(["espgrid", "--version"], env=env, stdout=subprocess.PIPE, text=True)
    assert r.returncode == 0 and r.stdout.startswith("espgrid ")


def test_installed_renderer_runs(installed):
    if subprocess.run(["/usr/bin/python3", "-c", "import vtk, matplotlib"], stderr=subprocess.DEVNULL).returncode:
        pytest.skip("the renderer needs python3-vtk9 and python3-matplotlib")
    env, scratch = installed["env"], installed["scratch"]
    r = subprocess.run(["espgrid", "map", "data/fasciculin2.pqr", "-o", "r.vti",
                        "--spacing", "1.5"], cwd=scratch, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if r.returncode != 0 and "VTK" in r.stderr:
        pytest.skip("this build writes no .vti")
    assert r.returncode == 0, r.stderr
    r = subprocess.run(["espgrid-render", "r.vti", "--structure", "data/fasciculin2.pqr", "--kinds", "slices",
                        "--out", "r"], cwd=scratch, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert os.path.getsize(os.path.join(scratch, "r-slices.png")) > 10000


@pytest.mark.parametrize("kind, example", EXAMPLES, ids=[f"{k}:{e.splitlines()[0][:60]}" for k, e in EXAMPLES])
def test_readme_example(installed, kind, example):
    reason = why_skip(kind, example)
    if reason:
        pytest.skip(reason)
    env, scratch = dict(installed["env"]), installed["scratch"]
    if "mpirun" in example and os.geteuid() == 0:
        # README, Scale-out: as root OpenMPI wants --allow-run-as-root or these two variables.
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    command = ["/usr/bin/python3", "-c", example] if kind == "python" else ["bash", "-c", example]
    r = subprocess.run(command, cwd=scratch, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=1800)
    assert r.returncode == 0, f"{example}\n--- stdout ---\n{r.stdout}\n--- stderr ---\n{r.stderr}"
    # Every file an example says it writes is there.
    for written in re.findall(r"(?:-o|--std-output|--keep-pqr)\s+(\S+)", example):
        assert os.path.isfile(os.path.join(scratch, written)), f"{written} was not written"
    assert "Traceback" not in r.stderr, r.stderr


def test_help_texts_point_at_what_exists(cli):
    # Help that sends the reader to a README section or to "below" must find it there.
    # Help text is ASCII: an en dash in a heading is written '-' there.
    headings = {re.sub(r"^#+\s*", "", line).strip().replace("\u2013", "-") for line in open(os.path.join(ROOT, "README.md"), encoding="utf-8")
                if line.startswith("#")}
    texts = {verb: cli(verb, "--help").stdout for verb in ("map", "verify", "bench", "convert", "atoms", "kernels")}
    texts["espgrid"] = cli("--help").stdout
    traj = subprocess.run(["/usr/bin/python3", "-m", "espgrid", "--help"], stdout=subprocess.PIPE, text=True,
                          env=dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(espgrid.__file__))))
    texts["espgrid-trajectory"] = traj.stdout
    for name, text in texts.items():
        flat = " ".join(text.split())
        for section in re.findall(r"README(?:\.md)?, section '([^']+)'", flat):
            assert section in headings, f"{name} --help names README section {section!r}, which does not exist"
        assert " below" not in flat, f"{name} --help points below: {flat}"
        # Every output format is named where the verb writes maps.
        if name in ("espgrid", "map", "convert"):
            assert ".mrc" in flat, f"{name} --help does not mention .mrc"
        # No empty option group (a heading with nothing under it).
        assert not re.search(r"\n [A-Z][a-z]+ options:\n\n", text), f"{name} --help shows an empty group:\n{text}"
