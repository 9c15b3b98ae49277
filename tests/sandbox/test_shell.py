"""The persistent shell: state that persists, exit codes, the output cap, and a dead shell."""

from __future__ import annotations

from logmine.sandbox import Limits


def test_cd_and_exports_persist_across_commands(make_box):
    shell = make_box({"src/a.txt": "a\n"}).shell()
    assert shell.run("cd src && export FOO=bar && BAR=not-exported").exit_code == 0
    result = shell.run("pwd; echo $FOO; bash -c 'echo child:$FOO'; cat a.txt")
    assert result.output == "/workspace/src\nbar\nchild:bar\na\n"


def test_shell_functions_and_tmp_persist_within_the_shell(make_box):
    shell = make_box().shell()
    shell.run("greet() { echo hello $1; }; echo kept > /tmp/note")
    assert shell.run("greet you; cat /tmp/note").output == "hello you\nkept\n"


def test_each_command_reports_its_own_exit_code(make_box):
    shell = make_box().shell()
    assert shell.run("false").exit_code == 1
    assert shell.run("true").exit_code == 0
    assert shell.run("(exit 42)").exit_code == 42
    result = shell.run("if then")
    assert result.exit_code == 2 and "syntax error" in result.output
    assert shell.run("echo still here").output == "still here\n"


def test_a_shell_starts_where_asked(make_box):
    shell = make_box({"pkg/x.py": ""}).shell(cwd="pkg")
    assert shell.run("pwd").output == "/workspace/pkg\n"


def test_output_without_a_final_newline_and_a_command_reading_stdin(make_box):
    shell = make_box().shell()
    assert shell.run("printf 'no newline'").output == "no newline"
    assert shell.run("cat; echo done").output == "done\n"  # stdin is empty, not the shell's protocol


def test_output_is_capped_head_and_tail_with_a_marker(make_box):
    shell = make_box(limits=Limits(output_bytes=40)).shell()
    full = "".join(f"{i}\n" for i in range(1, 1001))
    result = shell.run("seq 1 1000")
    assert result.truncated and result.exit_code == 0
    assert result.output == full[:20] + f"\n[... {len(full) - 40} bytes cut ...]\n" + full[-20:]


def test_a_command_that_redirects_the_shell_output_does_not_hang_it(make_box):
    shell = make_box().shell()
    assert shell.run("exec 1>/dev/null; echo lost").exit_code == 0
    assert shell.run("echo after").exit_code == 0


def test_a_timeout_kills_the_shell_and_later_commands_are_unscored(make_box, mark, find_processes):
    shell = make_box(limits=Limits(wall_s=2)).shell()
    result = shell.run(f"export MARK={mark}; echo started; sleep 30")
    assert result.timed_out and result.unscored and result.output == "started\n"
    assert find_processes(mark) == []
    after = shell.run("echo hi")
    assert after.unscored and after.error == "the shell was killed when an earlier command timed out"


def test_a_per_command_timeout_overrides_the_limit(make_box):
    shell = make_box(limits=Limits(wall_s=30)).shell()
    assert shell.run("sleep 5", timeout_s=0.3).timed_out


def test_exit_ends_the_shell_with_its_code(make_box):
    shell = make_box().shell()
    result = shell.run("echo bye; exit 7")
    assert result.exit_code == 7 and result.output == "bye\n" and not result.unscored
    assert shell.run("true").error == "the shell has exited (exit code 7)"


def test_two_shells_share_the_workspace_not_their_state(make_box):
    box = make_box()
    one, two = box.shell(), box.shell()
    one.run("export X=1; cd /tmp; echo shared > /workspace/f")
    assert two.run("echo X=$X; pwd; cat f").output == "X=\n/workspace\nshared\n"
