"""ctxhealth: keep long-running LLM agents healthy. The public API lives here."""

from ctxhealth.errors import CtxHealthError
from ctxhealth.model import Message, Role, Session

__all__ = ["CtxHealthError", "Message", "Role", "Session"]
__version__ = "0.1.0"
