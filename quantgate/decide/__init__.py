"""The decision: gate checks, the recommendation, regression sets, rollback signals, decision.md."""
