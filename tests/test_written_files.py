"""The files a shell line writes by redirection or ``tee``: a replay makes their directories, which
git never keeps when empty."""

from __future__ import annotations

from logmine.commandline import written_files


def test_redirections_and_tee_name_the_files_a_line_writes():
    assert written_files("cat > /p/_bmad-output/planning-artifacts/prd.md <<'EOF'\nx > y\nEOF") == [
        "/p/_bmad-output/planning-artifacts/prd.md"]  # the heredoc's body is no redirection
    assert written_files("cd sub && echo hi >> out/log.txt 2>&1") == ["sub/out/log.txt"]
    assert written_files("echo x | tee -a notes/a.md b.md") == ["notes/a.md", "b.md"]
    assert written_files("make &> build.log; ls < in.txt") == ["build.log"]
    assert written_files("python3 - <<'PY'\nopen('x','w')\nPY") == []
