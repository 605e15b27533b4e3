"""codeask: answers codebase questions with citations checked against a pinned snapshot."""

__version__ = "0.1.0"
