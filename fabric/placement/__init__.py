"""Placement: decide where a write goes (pure) and apply it (one transaction)."""
