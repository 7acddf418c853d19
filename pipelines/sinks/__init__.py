"""Results out: the result builder, the SQLite store, webhooks, exporters, the feature cache."""
