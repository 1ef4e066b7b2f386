"""Importer for Berkeley Function Calling Leaderboard (BFCL) results, with BFCL's own verdicts.

Reads, for the BFCL version of 2024-08 (gorilla ``berkeley-function-call-leaderboard/data`` @ de8307b4 and
``HuanzhiMao/BFCL-Result`` folder ``2024-08-11``; Patil et al., "Gorilla", arXiv 2305.15334, and the BFCL
blog/leaderboard, 2024):

* questions ``gorilla_openfunctions_v1_test_<category>.json`` (``id, question, function``),
* possible answers ``possible_answer/gorilla_openfunctions_v1_test_<category>.json``
  (``{param: [acceptable values]}``, ``""`` = may be omitted),
* model results ``result/<model>/gorilla_openfunctions_v1_test_<category>_result.json[.gz]``,
* scores ``score/<model>/<category>_score.json[.gz]`` (header line, then one line per *failed* entry with a
  1-based ``id``).

Files are read plain or gzip-compressed, told apart by their magic bytes. Each (model, entry) becomes one
:class:`~agentstats.records.trial.Trial` (``trial=0``) with one interaction: the question, the model's calls decoded
from
its raw output (per-model output styles, as BFCL's model handlers decode them), the expected calls with
acceptable alternatives as ``{"$any_of": [...], "$optional": bool}`` markers (:func:`possible_answer_markers`),
the function specs as ``tools``, and BFCL's verdict as ``success``.

Two entry points: the ``"bfcl"`` format of :func:`agentstats.io.load_trials` (``load_trials(root, format="bfcl")``,
a :class:`~agentstats.io.TrialSet` whose problems are collected and reported like every loader's), and
:func:`import_bfcl` (the same trials plus BFCL's own verdicts, decode errors and score-file headers, for comparing
verdicts). The scorer
that reproduces BFCL's verdicts lives above io: :func:`agentstats.scoring.bfcl.bfcl_verdict`.

Only the AST categories (simple, multiple_function, parallel_function, parallel_multiple_function) are
supported: the executable, REST and relevance categories need execution or no ground truth calls.

The package: :mod:`~agentstats.io.readers.bfcl.decode` (a model's raw output to calls) and
:mod:`~agentstats.io.readers.bfcl.reader` (folders to trials); importing it registers the ``"bfcl"`` format.
"""

from agentstats.io.readers.bfcl.decode import BfclDecodeError, decode_bfcl_output, output_style
from agentstats.io.readers.bfcl.reader import (
    AST_CATEGORIES,
    UNDERSCORE_TO_DOT,
    BfclImport,
    import_bfcl,
    possible_answer_markers,
    read_bfcl,
)

__all__ = [
    "AST_CATEGORIES",
    "UNDERSCORE_TO_DOT",
    "BfclDecodeError",
    "BfclImport",
    "decode_bfcl_output",
    "import_bfcl",
    "output_style",
    "possible_answer_markers",
    "read_bfcl",
]
