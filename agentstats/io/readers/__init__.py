"""One reader module per input format that is not the project's own trial records (:mod:`agentstats.io.jsonl`).

Counts tables, METR runs, tau-bench, tau2-bench, Inspect AI logs, OpenTelemetry/OpenInference spans, Fair Forge and
BFCL (trials); score records, eval sets and calibration sets (record sets, whose record types live in
:mod:`agentstats.records`). Each registers its format with :mod:`agentstats.io.registry` when imported.
"""
