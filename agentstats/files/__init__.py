"""File mechanics shared by every writer and reader.

Atomic writes (:mod:`.atomic`) and run manifests (:mod:`.manifest`). Nothing here knows a file format's meaning.
"""
