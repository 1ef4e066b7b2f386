"""File mechanics shared by every writer and reader.

Atomic writes (:mod:`.atomic`), run manifests (:mod:`.manifest`), and a file's bytes (:mod:`.sniff`: magic numbers,
transparent gzip, the run-store files this process holds and must not open). Nothing here knows a file format's
meaning.
"""
