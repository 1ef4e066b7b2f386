"""Small helpers that any layer may use.

Lazy public names (:mod:`.lazy`), escaping of data strings for Markdown, HTML and matplotlib text (:mod:`.markup`),
how a message names an option in Python or on the command line (:mod:`.options`), and counts in words
(:mod:`.text`).
"""
