"""The agent harness shared by ``train grpo``, ``filter`` and ``eval``: TMax tasks, their sandboxed
environment, tool-call parsers, rollout engines and the token-in/token-out rollout loop."""
