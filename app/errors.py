"""The CLI's exit statuses and error types; they live at the bottom (`models.errors`) so every layer can use them."""

from models.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_OK, BadInput, StreamFailed

__all__ = ["EXIT_BAD_INPUT", "EXIT_INTERNAL", "EXIT_OK", "BadInput", "StreamFailed"]
