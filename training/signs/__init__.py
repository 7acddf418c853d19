"""The labelled sign set: text rendered with Debian fonts onto real photos, for OCR word accuracy."""
