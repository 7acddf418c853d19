"""Audio models that run offline from installed packages: speech activity, speech recognition, sound tags."""
