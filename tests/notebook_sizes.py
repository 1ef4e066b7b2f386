"""nbval runs the notebook templates at test sizes, on a papermill-parameterized copy (a pytest plugin).

The templates' own defaults are the command line's full sizes (:mod:`agentstats.report.params`): a user who opens
``notebooks/report.ipynb`` in JupyterLab or runs it with papermill gets the fit ``agentstats report`` samples. The
everyday suite cannot spend that long, so this plugin (registered by ``pytest_startup``, which the Makefile loads with
``-p pytest_startup``) swaps nbval's collector of each template below for one that reads a copy that papermill's
``parameterize_notebook`` gave an injected-parameters cell: small draws, PyMC (its compiled C is cached across runs,
nutpie's numba code is not), one core, and the example data by its absolute path (the kernel runs in the copy's
folder). The test ids stay ``notebooks/report.ipynb::Cell N``; the injected cell is one more cell to run. No switch
in the package and no edit of the template: nbval still runs every cell of it.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from _pytest.compat import legacy_path
from nbval.plugin import IPyNbFile

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
EXAMPLE = str(REPO / "data" / "example_trials.jsonl")

#: Test sizes per template (the sizes these templates had as their own defaults before the defaults became the
#: command line's). The gate notebook has no sizes and is run as it is.
TEST_PARAMETERS: dict[str, dict[str, Any]] = {
    "report.ipynb": {"input_path": EXAMPLE, "n_boot": 500, "draws": 100, "tune": 100, "chains": 2, "sampler": "pymc",
                     "cores": 1},
    "compare.ipynb": {"run_paths": [EXAMPLE, EXAMPLE], "n_boot": 500, "draws": 200, "tune": 200, "chains": 2,
                      "run_bayes": False},
}

_FOLDERS: list[str] = []


def small_copy(template: Path, parameters: dict[str, Any], folder: Path) -> Path:
    """Write ``template`` with papermill's injected-parameters cell for ``parameters`` into ``folder``."""
    import nbformat
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    nb = parameterize_notebook(load_notebook_node(str(template)), parameters)  # papermill's reader: every cell tagged
    copy = folder / template.name
    nbformat.write(nb, copy)
    return copy


class SmallNotebook(IPyNbFile):
    """nbval's collector of a template that reads and runs its test-size copy (``small``) instead."""

    small: Path

    @property
    def fspath(self):  # nbval reads the notebook from here and starts the kernel in its folder
        return legacy_path(self.small)


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    """Replace nbval's collector of a template in ``notebooks/`` by one that runs its test-size copy."""
    collected = yield
    parameters = TEST_PARAMETERS.get(file_path.name) if file_path.parent == NOTEBOOKS else None
    if not parameters or not collected:
        return collected
    replaced = []
    for node in collected:
        if isinstance(node, IPyNbFile):
            folder = tempfile.mkdtemp(prefix="agentstats-nbval-")
            _FOLDERS.append(folder)
            node = SmallNotebook.from_parent(parent, path=file_path)
            node.small = small_copy(file_path, parameters, Path(folder))
        replaced.append(node)
    return replaced


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove the copies."""
    for folder in _FOLDERS:
        shutil.rmtree(folder, ignore_errors=True)
