"""The one redaction gate every tool result passes before it can reach a language model or Slack."""

from codeask.redact.files import (
    VALUE_BELOW,
    config_syntax,
    has_value_below,
    mask_file,
    masks_more_as_data,
)
from codeask.redact.gate import Redaction, RedactionGate, Scanner
from codeask.redact.kinds import KINDS, REDACTED, count_markers
from codeask.redact.pem import key_open_after, private_key_lines
from codeask.redact.scanner import scan

__all__ = [
    "KINDS",
    "REDACTED",
    "VALUE_BELOW",
    "Redaction",
    "RedactionGate",
    "Scanner",
    "config_syntax",
    "count_markers",
    "has_value_below",
    "key_open_after",
    "mask_file",
    "masks_more_as_data",
    "private_key_lines",
    "scan",
]
