"""One adversarial test per isolation property the bubblewrap sandbox claims.

Each test attacks the sandbox the way an agent could and checks the host side, so that each one
fails if the property it names is lost (a shared network namespace, a writable host path, a missing
rlimit, an output buffer without a cap, hidden files in view, a grader the agent can influence).
"""

from __future__ import annotations

import hashlib
import resource
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import logmine.patch
from logmine.sandbox import Limits

CONNECT = textwrap.dedent("""
    import socket, sys
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect((sys.argv[1], int(sys.argv[2])))
        print("CONNECTED")
    except OSError as exc:
        print("ERRNO", exc.errno)
""")


def _connect(box, host: str, port: int):
    return box.run(f"python3 -c {shlex.quote(CONNECT)} {host} {port}")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_no_network_to_an_outside_address(make_box):
    result = _connect(make_box(), "10.255.255.1", 80)
    # ENETUNREACH at once: the sandbox has no route at all (with the host's network the connect
    # would hang until the timeout or reach something)
    assert result.output.strip() == "ERRNO 101", result


def test_no_network_to_a_port_on_the_host_loopback(make_box):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    port = listener.getsockname()[1]
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass  # reachable from outside the sandbox
        result = _connect(make_box(), "127.0.0.1", port)
    finally:
        listener.close()
    assert result.output.strip() == "ERRNO 111", result  # ECONNREFUSED: its loopback is its own


def test_no_write_outside_the_workspace(make_box, tmp_path):
    box = make_box({"a.txt": "original\n"})
    guarded = [Path(logmine.patch.__file__), Path("/etc/hosts"), Path(sys.base_prefix) / "lib" / "os.py"]
    guarded = [p for p in guarded if p.exists()]
    before = {p: _sha(p) for p in guarded}
    attempts = [f"echo pwned >> {shlex.quote(str(p))}" for p in guarded]
    attempts += ["echo pwned >> /opt/logmine/lib/logmine/patch/__init__.py",  # the host's module, bound read-only
                 "echo pwned > /usr/bin/logmine-pwned", "echo pwned > /pwned"]
    result = box.run("; ".join(attempts) + "; echo changed > a.txt")
    refusals = sum(result.output.count(word) for word in ("Read-only file system", "Permission denied", "No such file"))
    assert refusals == len(attempts), result
    assert {p: _sha(p) for p in guarded} == before
    assert not Path("/usr/bin/logmine-pwned").exists() and not Path("/pwned").exists()
    assert (tmp_path / "source-0" / "a.txt").read_text() == "original\n"  # the caller's tree stays pristine
    assert (box.workspace / "a.txt").read_text() == "changed\n"  # while the copy is writable


def test_a_symlink_in_the_workspace_cannot_be_written_through(make_box, public_dir):
    outside = public_dir / "outside"
    outside.mkdir(mode=0o777)
    outside.chmod(0o777)
    (outside / "host.txt").write_text("host\n")
    (outside / "host.txt").chmod(0o666)  # writable by anyone: only the mounts protect it
    box = make_box(links={"to_file": str(outside / "host.txt"), "to_dir": str(outside),
                          "to_patch": "/opt/logmine/lib/logmine/patch/__init__.py"})
    result = box.run("echo pwned > to_file; echo pwned > to_dir/new.txt; echo pwned >> to_patch; ls to_dir")
    assert (outside / "host.txt").read_text() == "host\n"
    assert sorted(p.name for p in outside.iterdir()) == ["host.txt"], result
    assert "pwned" not in Path(logmine.patch.__file__).read_text()


def test_fork_bomb_is_contained(make_box, mark, find_processes):
    box = make_box(limits=Limits(processes=32, wall_s=3))
    peak, stop = [0], threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], len(find_processes(mark)))
            time.sleep(0.005)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        # bounded on purpose (2^10 processes at most) so that a broken limit cannot hurt the host
        result = box.run("b() { if [ $1 -gt 0 ]; then b $(($1-1)) & b $(($1-1)) & fi; sleep 1; wait; }; b 9",
                         env={"MARK": mark})
    finally:
        stop.set()
        sampler.join()
    assert 10 <= peak[0] <= 32, (peak[0], result)
    assert "fork" in result.output and "Resource temporarily unavailable" in result.output
    assert find_processes(mark) == []


def test_an_infinite_loop_is_killed_at_the_timeout(make_box, mark, find_processes):
    box = make_box(limits=Limits(wall_s=1))
    result = box.run("sleep 1000 & while :; do :; done", env={"MARK": mark})
    assert result.timed_out and result.exit_code is None and result.unscored
    assert 0.9 < result.duration_s < 2.5
    assert find_processes(mark) == []  # the loop and its background child: the whole namespace


def test_cpu_time_is_limited(make_box):
    box = make_box(limits=Limits(cpu_s=1, wall_s=10))
    result = box.run("while :; do :; done")
    assert not result.timed_out  # stopped by the CPU limit, long before the wall clock
    assert result.exit_code in (128 + signal.SIGXCPU, 128 + signal.SIGKILL), result


def test_a_memory_hog_is_stopped(make_box):
    box = make_box(limits=Limits(memory_mb=256))
    result = box.run("python3 -c 'b = bytearray(1 << 30); print(\"ALLOCATED\")'")
    assert result.exit_code == 1 and "MemoryError" in result.output, result
    assert "ALLOCATED" not in result.output


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_runtimes_that_reserve_address_space_run_under_the_memory_limit(make_box):
    # V8 reserves gigabytes of address space for a WebAssembly memory (vitest's parser is one)
    box = make_box(limits=Limits(memory_mb=1024))
    result = box.run("node -e 'new WebAssembly.Memory({initial: 1}); console.log(\"wasm ok\")'")
    assert result.exit_code == 0 and "wasm ok" in result.output, result


def test_file_size_is_limited(make_box):
    box = make_box(limits=Limits(file_mb=1))
    result = box.run("head -c 3000000 /dev/zero > big")
    assert result.exit_code == 128 + signal.SIGXFSZ, result
    assert (box.workspace / "big").stat().st_size <= 1 << 20


def test_a_gigabyte_of_output_is_capped_without_host_memory(make_box):
    box = make_box(limits=Limits(output_bytes=64_000, wall_s=60))
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    result = box.run("yes | head -c 1000000000")
    peak_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert result.exit_code == 0 and result.truncated
    assert f"[... {1_000_000_000 - 64_000} bytes cut ...]" in result.output
    assert len(result.output) < 64_100
    assert peak_after - peak_before < 200 * 1024, "the host buffered the output"


def test_hidden_test_files_are_unreadable_before_grading(make_box, public_dir):
    secret = f"SECRET_{secrets.token_hex(8)}"
    hidden = public_dir / "store" / "hidden" / "test_hidden_grader.py"
    hidden.parent.mkdir(parents=True)
    for path in (public_dir / "store", hidden.parent):
        path.chmod(0o755)
    hidden.write_text(f"assert '{secret}'\n")
    hidden.chmod(0o644)  # readable by anyone on the host: only the mounts hide it
    box = make_box({"tests/test_visible.py": "pass\n"})
    search = (f"cat {hidden}; ls {hidden.parent}; "
              f"find / \\( -path /proc -o -path /usr -o -path /sys -o -path {sys.base_prefix} \\) -prune "
              "-o -name 'test_hidden*' -print; "
              f"grep -rl {secret} /tmp /etc /opt /workspace")
    before = box.run(search)
    assert secret not in before.output and "test_hidden_grader" not in before.output.replace(str(hidden), "")
    box.install_files({"tests/test_hidden_grader.py": hidden.read_text()})
    after = box.run(search)
    assert "/workspace/tests/test_hidden_grader.py" in after.output  # the same search finds it now


def test_the_agent_cannot_change_what_the_grader_runs(make_box):
    grader = "print(open('data/expected.txt').read().strip())\n"
    box = make_box({"tests/test_grader.py": grader, "data/expected.txt": "REAL\n", "src.py": "x = 1\n"})
    agent = box.shell()
    # the agent swaps the test directory for its own, points the data file elsewhere, keeps a
    # process rewriting both, and prepares its shell and home to divert later commands
    steps = [
        "mkdir -p /tmp/evil/tests && echo \"print('FAKE')\" > /tmp/evil/tests/test_grader.py",
        "rm -r tests && ln -s /tmp/evil/tests tests",
        "echo FAKE > /tmp/evil/expected.txt && rm data/expected.txt && ln -s /tmp/evil/expected.txt data/expected.txt",
        "(while :; do echo \"print('FAKE')\" > tests/test_grader.py; echo FAKE > data/expected.txt; sleep 0.01; "
        "done 2>/dev/null) &",
        "mkdir -p bin && printf '#!/bin/sh\\necho FAKE\\n' > bin/python3 && chmod +x bin/python3",
        "export PATH=$PWD/bin:$PATH BASH_ENV=$HOME/.bashrc; alias python3='echo FAKE'",
        "mkdir -p ~/.local/lib/python3.11/site-packages && echo 'print(\"FAKE\")' > "
        "~/.local/lib/python3.11/site-packages/usercustomize.py",
        "echo 'echo FAKE' > ~/.bashrc",
    ]
    for step in steps:
        assert agent.run(step).exit_code == 0, step
    assert agent.run("python3 tests/test_grader.py").output.strip() == "FAKE"  # the traps work on the agent
    box.install_files({"tests/test_grader.py": grader, "data/expected.txt": "REAL\n"})
    time.sleep(0.1)  # the rewriting loop would have struck by now
    result = box.run("python3 tests/test_grader.py")
    assert result.output == "REAL\n", result
    for rel in ("tests", "tests/test_grader.py", "data/expected.txt"):
        assert not (box.workspace / rel).is_symlink(), rel
    assert agent.run("true").unscored  # the agent's shell was ended before grading


def test_nothing_survives_close(make_box, mark, find_processes, wait_processes):
    box = make_box()
    shell = box.shell()
    assert shell.run(f"export MARK={mark}; sleep 1000 & echo started").output == "started\n"
    assert wait_processes(mark)
    box.close()
    assert find_processes(mark) == []


def test_the_sandbox_dies_with_its_host_process(bwrap_ready, tmp_path, mark, find_processes, wait_processes):
    script = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from logmine.sandbox import open_sandbox
        from logmine.sandbox.hostview import etc_view
        box = open_sandbox(Path(sys.argv[1]))
        box.shell().run("export MARK={mark}; sleep 1000 &")
        print(box.workspace.parent, etc_view(), flush=True)
        time.sleep(1000)
    """)
    (tmp_path / "src").mkdir()
    host = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "src")], stdout=subprocess.PIPE, text=True)
    try:
        leftovers = host.stdout.readline().split()  # what a killed host process cannot remove itself
        assert wait_processes(mark)
        host.kill()
        host.wait()
        deadline = time.monotonic() + 3
        while find_processes(mark) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert find_processes(mark) == []
    finally:
        host.kill()
        host.wait()
        subprocess.run(["rm", "-rf", *leftovers], check=False)


def test_commands_run_unprivileged_alone_in_their_namespaces(make_box):
    result = make_box().run("id -u; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; ls /proc | grep -c '^[0-9]'; "
                            "hostname; cat /etc/passwd | cut -d: -f1 | tr '\\n' ' '")
    uid, capeff, nonewprivs, count, hostname, users = result.output.splitlines()
    assert uid != "0"
    assert capeff.split() == ["CapEff:", "0000000000000000"] and nonewprivs.split() == ["NoNewPrivs:", "1"]
    assert int(count) <= 5  # bwrap's init, bash and the pipeline: no host process is visible
    assert hostname == "sandbox"
    assert users.split() == ["root", "agent", "nobody"]  # not the host's accounts
