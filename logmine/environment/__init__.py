"""Each task's software environment: what it needs (:mod:`.detect`) and how it is provided (:mod:`.provide`).

Between segment and verify: verify detects a task's environment on its rebuilt start tree and
provides it to the sandbox; export writes the same recipe into the bundle's Dockerfile and provides
it the same way to check the bundle.
"""
