"""Everything a person reads.

The report's parameters (:mod:`.params`, the one owner of each option) and everything it shows, computed once
(:mod:`.build`); display tables (:mod:`.tables`, :mod:`.model_tables`, :mod:`.scoring_tables`), plain-language
readings (:mod:`.prose`, :mod:`.captions`), what a report was computed from (:mod:`.provenance`), figures
(:mod:`.plots`, :mod:`.scoring_plots`); and the executed notebooks with their HTML (:mod:`.notebook` runs them,
:mod:`.html` exports them, :mod:`.display` sets up their kernels; :mod:`.gate` for the gate and the loop).
"""
