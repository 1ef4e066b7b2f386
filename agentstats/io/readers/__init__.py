"""One reader module per outside format.

Counts tables, METR runs, tau-bench, tau2-bench, Inspect AI logs, OpenTelemetry/OpenInference spans, Fair Forge and
BFCL; each registers itself with :mod:`agentstats.io`'s format registry.
"""
