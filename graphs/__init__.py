"""LangGraph graphs: the extraction pipeline production runs, and the evaluation graph."""
