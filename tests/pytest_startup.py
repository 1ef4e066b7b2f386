"""Loaded first (``-p tests.pytest_startup`` in the Makefile), before any plugin imports ``jsonschema``.

``rfc3987-syntax`` (pulled in by ``jupyter-events`` through ``jsonschema[format-nongpl]``) builds a Lark grammar when
imported, about 3 s in every test worker. ``jsonschema`` only uses it to check the ``iri`` / ``iri-reference``
formats, which neither agentstats nor its tests validate, and imports it under ``suppress(ImportError)``: marking it
absent here makes ``jsonschema`` skip those two format checks in the test processes only (kernels, CLI subprocesses
and user installs are unaffected).
"""

import sys

sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[assignment]

# nbval runs the notebook templates at test sizes (tests/notebook_sizes.py); the templates keep the full sizes.
pytest_plugins = ["notebook_sizes"]
