"""What the command line prints: rich tables, plain lines and ``--json`` payloads, one module per command family.

The commands compute through the library and hand their results here; nothing here computes a statistic or a
decision. Values that cannot be estimated are said in words ("n/a", "not estimable"), small probabilities are never
printed as an exact 0 or 1 (:func:`agentstats.cli.render.text.prob_text`), and every interval is named by its
probability (and, for a posterior, its kind) as the result table records it.

Modules: :mod:`~agentstats.cli.render.text` (shared formatting), :mod:`~agentstats.cli.render.estimate`,
:mod:`~agentstats.cli.render.fit`, :mod:`~agentstats.cli.render.score`, :mod:`~agentstats.cli.render.compare`,
:mod:`~agentstats.cli.render.gate` (gate and loop), :mod:`~agentstats.cli.render.calibrate`,
:mod:`~agentstats.cli.render.runs` (the run store).
"""
