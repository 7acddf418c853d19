"""The stage graph (`graph`) and its two runners: Ray actors (`pipeline`, `actors`) and inline (`inline`)."""
