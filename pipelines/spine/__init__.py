"""The stage graph and its runners: Ray actors (`pipeline`, `actors`), inline (`inline`), batch (`batch`)."""
