"""The run directory: its file names, typed models, readers and writers."""
