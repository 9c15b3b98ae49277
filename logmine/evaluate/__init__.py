"""Measure policies on TMax task sets: K-rollout sampling (resumable), reward-variance filtering
(``logmine filter``) and pass@k with bootstrap intervals (``logmine eval``)."""
