"""Everything a person reads.

Tables and plain-language readings (:mod:`.describe`), figures (:mod:`.plots`, :mod:`.scoring_plots`), scoring
tables (:mod:`.scoring_tables`), and the executed notebooks with their HTML (:mod:`.notebook` for the report and the
comparison, :mod:`.gate` for the gate and the loop).
"""
