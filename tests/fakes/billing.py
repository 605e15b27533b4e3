"""The small 'billing' repository the integration tests ask their questions about."""

WORKER = (
    "import time\n\nfrom billing.policy import RetryPolicy\n\n\n"
    "def retry_job(job, policy: RetryPolicy):\n"
    "    for attempt in range(policy.max_attempts):\n"
    "        if job.run():\n            return True\n"
    "        time.sleep(policy.backoff(attempt))\n    return False\n"
)
POLICY = (
    "class RetryPolicy:\n    max_attempts = 5\n\n    def backoff(self, attempt):\n"
    "        return 2 ** attempt\n"
)
FILES = {
    "billing/worker.py": WORKER,
    "billing/policy.py": POLICY,
    "README.md": "# billing\nRetries failed jobs.\n",
}
