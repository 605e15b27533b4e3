"""In-process fakes of external services that the tests drive through the real client libraries."""
