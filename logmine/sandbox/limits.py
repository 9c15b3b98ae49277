"""What one sandboxed command may use, and the start-up script that enforces it inside."""

from __future__ import annotations

from dataclasses import dataclass, fields

MIB = 1 << 20


@dataclass(frozen=True, slots=True)
class Limits:
    """Limits of one command (each ``run``, each command of a shell).

    ``cpu_s``, ``memory_mb`` (data: the writable private memory a process maps, RLIMIT_DATA),
    ``file_mb`` (largest file written) are per process (setrlimit); ``processes`` counts every process of the sandbox's user; ``wall_s`` ends the whole
    sandbox (its PID namespace) when exceeded. ``output_bytes`` caps the captured output: the first
    and last halves are kept. ``tmp_mb`` sizes the private ``/tmp`` (a tmpfs: host memory).
    ``disk_mb`` is the quota of the whole writable workspace copy (a tmpfs when logmine runs as root;
    see quota.py), for all the sandbox's commands together.
    """

    wall_s: float = 120.0
    cpu_s: int = 120
    memory_mb: int = 4096
    processes: int = 512
    file_mb: int = 1024
    output_bytes: int = 64_000
    tmp_mb: int = 512
    disk_mb: int = 2048

    def __post_init__(self) -> None:
        for f in fields(self):
            if not getattr(self, f.name) > 0:
                raise ValueError(f"Limits.{f.name} must be positive, got {getattr(self, f.name)!r}")


def startup_script(limits: Limits) -> str:
    """Bash run before every sandboxed command (``BASH_ENV``): set the limits, print the start token.

    The limits are lowered by the sandbox user itself (lowering needs no privilege); where the host
    already caps a limit lower, that lower cap stays. If a limit cannot be set, the command does not
    run (exit 125, no start token: an infrastructure error). ``-d`` and ``-f`` are in KiB.

    Memory is RLIMIT_DATA, not the address space (RLIMIT_AS): Node's WebAssembly, Go and the JVM
    reserve gigabytes of address space they never touch, and under an address-space cap vitest (its
    parser is WebAssembly) fails with "Cannot allocate Wasm memory" before a test runs.
    """
    kib = MIB // 1024
    return f"""unset BASH_ENV
__logmine_limit() {{
    ulimit "$1" "$2" 2>/dev/null && return 0
    local hard; hard=$(ulimit -H "$1")
    [ "$hard" != unlimited ] && [ "$hard" -le "$2" ] && ulimit -S "$1" "$hard"
}}
__logmine_limit -d {limits.memory_mb * kib} && __logmine_limit -u {limits.processes} \
    && __logmine_limit -f {limits.file_mb * kib} && __logmine_limit -c 0 \
    && __logmine_limit -t {limits.cpu_s + 1} && ulimit -S -t {limits.cpu_s} \
    || {{ echo "logmine sandbox: could not set the limits" >&2; exit 125; }}
unset -f __logmine_limit
printf %s "$LOGMINE_START"
unset LOGMINE_START
"""
