"""Load tests: the dataset's prompts at named concurrency levels, per variant."""
