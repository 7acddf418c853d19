"""Media in: sources, PyAV decoding, the 1-s segmenter, and live ingest with reconnects."""
