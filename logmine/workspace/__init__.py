"""A task's start tree, rebuilt on the host: the session's repository at its commit plus the earlier work.

Between environment and verify, shared by the stages that need a task's workspace: verify replays
and grades on it, ``export tmax`` writes it into the bundle's seeds, and the agent harness reads files
of a sandbox's workspace with :func:`read_inside`.

- :mod:`.start`: :func:`rebuild` (find the repository, export its commit, redo the earlier work, fall
  back to a commit the author made during the session) and :func:`read_inside`;
- :mod:`.edits`: the earlier tasks' patches and file-editing shell commands, redone (a dirty start
  tree told from a replay gap);
- :mod:`.shown`: files written as the session's own reads showed them, where the commit differs;
- :mod:`.untracked`: files untracked at the session's start, made from earlier sessions' patches;
- :mod:`.deps`: the end-of-task dependency manifests of a task that changed them;
- :mod:`.clones`: the clone of a session's repository under ``--repo-search`` roots.
"""

from logmine.workspace.start import NotRebuilt, RebuiltTree, map_path, read_inside, rebuild, rebuild_task, within

__all__ = ["NotRebuilt", "RebuiltTree", "map_path", "read_inside", "rebuild", "rebuild_task", "within"]
