"""Integrations with agent hosts: each sub-package adapts ctxhealth to one host (Claude Code, ...).

Nothing is imported here, so a host's hook process pays only for the integration it runs.
"""
