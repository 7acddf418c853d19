"""Services shared by the CLI, the REST routers and the dashboard: settings, jobs, batch, live streams, search and
uploads. Surfaces translate their input (flags, HTTP, widgets) into calls on these."""
