"""Talking to OpenAI-compatible endpoints.

The response cache with claims (:mod:`.cache`), the transport error classes and retry rules (:mod:`.transport`) and
token pricing (:mod:`.pricing`).
"""
