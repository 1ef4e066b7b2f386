"""The records every stage reads and writes.

The trial record and its one outcome rule (:mod:`.trial`), counts per (agent, task) with their one schema and
validator (:mod:`.counts`), and the problems a loader reports with file, line and field (:mod:`.problems`). This
package sits at the bottom of the layers: it imports no other part of agentstats.
"""
