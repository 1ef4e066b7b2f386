"""``agentstats report`` from an installed wheel, outside the repository: the template and the HTML template ship as
package data.

The wheel is built from the checkout (``pip wheel . --no-deps``) and installed, without dependencies, into a scratch
virtual environment that borrows the test environment's third-party packages through a ``.pth`` file; the report then
runs from a folder outside the repository, so nothing can be found through the source tree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    res = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert res.returncode == 0, f"{cmd}\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return res


@pytest.mark.slow
def test_report_runs_from_an_installed_wheel(tmp_path):
    # built from a copy of the source: setuptools keeps its build/ folder beside the sources, and a build/lib left by
    # an earlier build would put modules that no longer exist into the wheel
    source = tmp_path / "source"
    shutil.copytree(REPO, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".venv", ".git", "build", "dist", "reports", "__pycache__", "*.egg-info", ".cache", ".pytest_cache"))
    wheels = tmp_path / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "-q", "-w",
          str(wheels)], cwd=tmp_path)
    (wheel,) = wheels.glob("agentstats-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    modules = {n for n in names if n.startswith("agentstats/") and n.endswith(".py")}
    assert modules == {str(p.relative_to(REPO)) for p in (REPO / "agentstats").rglob("*.py")}
    assert "agentstats/report/templates/report.ipynb" in names
    assert "agentstats/report/templates/nbconvert/agentstats_report/index.html.j2" in names
    # the template in the wheel is the notebook itself, not a link to it
    text = zipfile.ZipFile(wheel).read("agentstats/report/templates/report.ipynb").decode()
    assert text == (REPO / "notebooks" / "report.ipynb").read_text()
    compare = zipfile.ZipFile(wheel).read("agentstats/report/templates/compare.ipynb").decode()
    assert compare == (REPO / "notebooks" / "compare.ipynb").read_text()

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    bin_dir = venv / "bin"
    purelib = Path(_run([str(bin_dir / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
                   .stdout.strip())
    # third-party packages from the test environment (not agentstats: it is an editable install there)
    (purelib / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([sys.executable, "-m", "pip", "--python", str(bin_dir / "python"), "install", "--no-deps", "-q", str(wheel)])
    # nbconvert's own templates are data files beside its environment (share/jupyter), as a full install has them;
    # the kernel is then the scratch interpreter's own (no kernelspec there), so it imports the installed wheel
    share = venv / "share" / "jupyter"
    share.mkdir(parents=True)
    (share / "nbconvert").symlink_to(Path(sys.prefix) / "share" / "jupyter" / "nbconvert")

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    where = _run([str(bin_dir / "python"), "-c", "import agentstats.report.notebook as r; print(r.default_notebook())"],
                 cwd=outside, env=env).stdout.strip()
    assert str(venv) in where and str(REPO) not in where
    res = _run([str(bin_dir / "agentstats"), "report", str(REPO / "data" / "example_trials.jsonl"), "--no-bayes",
                "--out-dir", "out", "-p", "kernel=python3"], cwd=outside, env=env)
    html = outside / "out" / "example_trials.html"
    assert html.is_file(), res.stderr
    assert "agentstats report: example_trials.jsonl" in html.read_text(encoding="utf-8")
