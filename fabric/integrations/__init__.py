"""Adapters to agent frameworks (optional extras): `fabric.integrations.langgraph`."""
