"""Runs compared on their shared tasks (:mod:`.runs`) and, optionally, logged to MLflow (:mod:`.tracking`)."""
