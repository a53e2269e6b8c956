"""The read path: a vector lookup plus SQL, never an LLM."""
