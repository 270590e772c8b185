"""Talking to models (COLLECT.md): the typed request body for a world, the three transports
(typed-decision endpoint, OpenAI-compatible chat completions, a local Python function), and
reading their answers. No database here: ``qlb.runs.collect`` stores what comes back."""
