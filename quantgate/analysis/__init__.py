"""Reading finished runs: the explore view, run comparison, the HTML report and its charts, tables."""
