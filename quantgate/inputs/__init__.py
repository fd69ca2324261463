"""What a run takes from the user: datasets, variant specs, gates and record schemas."""
