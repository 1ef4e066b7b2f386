"""The records every stage reads and writes.

The trial record, its one outcome rule and the one outcome code (:mod:`.trial`: ``OUTCOME_CODE``, ``outcome_codes``,
``check_error_status``), counts per (agent, task) with their one schema and validator (:mod:`.counts`) and the gaps of
the agent x task x trial grid (:mod:`.gaps`), score records (:mod:`.scores`), eval-set examples (:mod:`.evalset`),
calibration items (:mod:`.calibration`), and the problems a loader reports with file, line and field
(:mod:`.problems`: ``LoadError``). Readers of files holding them are in :mod:`agentstats.io`. This package sits at
the bottom of the layers: it imports no other part of agentstats but :mod:`agentstats._util`.
"""
