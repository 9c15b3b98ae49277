"""``logmine/__main__.py`` parses an ``ingest`` command line by hand (to answer an unchanged ingest
without importing the CLI): its tables of options cannot drift from the typer command's.

Every option of ``logmine ingest`` (each of its names) is a flag the quick parser knows, a valued
option it knows (with a value test that accepts nothing typer refuses), or one it leaves to the full
path; ``--store`` reads the same variable with the same default; and a command line the quick parser
answers means to typer what it means to the quick parser.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
import typer.main
from typer.core import TyperArgument, TyperOption

import logmine.__main__ as program
import logmine.cli.ingest  # noqa: F401  (registers the ingest command)
from logmine.cli.main import app
from logmine.cli.options import field_default
from logmine.ingest.run import IngestConfig
from logmine.locations import RAY_ADDRESS_ENV, STORE_ENV
from logmine.pipeline import load_pipeline
from logmine.store import DEFAULT_STORE

ROOT = typer.main.get_command(app)
INGEST = ROOT.commands["ingest"]
OPTIONS = [p for p in INGEST.get_params(typer.Context(INGEST)) if isinstance(p, TyperOption)]  # --help too
PACKAGED_STORE = Path(load_pipeline()["ingest"]["store"])  # the store `logmine ingest` uses without --store
SAMPLE_VALUES = ("0", "1", "2", "-1", "1.5", "x", "", "local", "ray", "s")


def _names(option: TyperOption) -> list[str]:
    return [*option.opts, *option.secondary_opts]


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(STORE_ENV, raising=False)
    monkeypatch.delenv(RAY_ADDRESS_ENV, raising=False)
    (tmp_path / "a").mkdir()


@pytest.mark.parametrize("option", OPTIONS, ids=lambda o: o.name)
def test_every_ingest_option_is_known_to_the_quick_parser_or_sends_it_down_the_full_path(option):
    for name in _names(option):
        if name in program.INGEST_FULL_PATH:
            argv = ["ingest", "a", name] if option.is_flag else ["ingest", "a", name, "1"]
            assert program.quick_ingest_args(argv) is None, name
        elif option.is_flag:
            assert name in program.INGEST_FLAGS, f"{name}: a flag of `logmine ingest` the quick parser does not know"
        else:
            assert name in program.INGEST_VALUED, f"{name}: an option of `logmine ingest` the quick parser does not know"
    meanings = {program.INGEST_FLAGS.get(n, program.INGEST_VALUED.get(n)) for n in _names(option)}
    assert len(meanings) == 1, f"{_names(option)}: one option, read differently under its names"


def test_every_option_the_quick_parser_knows_is_one_of_the_command_with_the_same_kind():
    by_name = {name: option for option in OPTIONS for name in _names(option)}
    for name in program.INGEST_FLAGS:
        assert name in by_name and by_name[name].is_flag, name
    for name in program.INGEST_VALUED:
        assert name in by_name and not by_name[name].is_flag, name
    assert not (set(program.INGEST_FLAGS) | set(program.INGEST_VALUED)) & program.INGEST_FULL_PATH


@pytest.mark.parametrize("name", sorted(program.INGEST_VALUED))
def test_the_quick_parser_accepts_no_value_typer_refuses(name):
    for value in SAMPLE_VALUES:
        if program.INGEST_VALUED[name](value):
            INGEST.make_context("ingest", ["a", name, value])  # raises typer's usage error if refused


def test_the_only_argument_is_the_paths_and_the_only_root_option_skipped_is_debug():
    arguments = [p for p in INGEST.params if isinstance(p, TyperArgument)]
    assert [(a.name, a.nargs) for a in arguments] == [("paths", -1)]
    debug = next(p for p in ROOT.params if "--debug" in p.opts)
    assert debug.is_flag


def test_store_reads_the_same_variable_with_the_same_default():
    store = next(o for o in OPTIONS if "--store" in o.opts)
    assert store.envvar == STORE_ENV
    assert Path(program.DEFAULT_STORE) == DEFAULT_STORE == field_default(IngestConfig, "store") == PACKAGED_STORE
    assert store.show_default == program.DEFAULT_STORE


def test_the_packaged_pipeline_leaves_what_the_quick_parser_assumes_unset():
    """No ``--pipeline``: the packaged settings apply; the quick parser takes them for no paths (the Codex
    home's) and local workers."""
    settings = load_pipeline()
    assert settings["ingest"]["paths"] == [] and settings["executor"] == {"kind": "local", "address": ""}


@pytest.mark.parametrize("option", [o for o in OPTIONS if o.envvar], ids=lambda o: o.name)
def test_an_option_set_from_its_variable_is_read_or_sends_the_quick_parser_down_the_full_path(option, monkeypatch):
    monkeypatch.setenv(option.envvar, "from-env")
    quick = program.quick_ingest_args(["ingest", "a"])
    if option.envvar == STORE_ENV:
        assert quick.store == Path("from-env")
    else:
        assert quick is None, f"${option.envvar} sets {option.opts[0]}, which the quick parser leaves to the full path"


@pytest.mark.parametrize("argv", [
    ["a"], ["a", "--store", "s", "--json"], ["a", "-q", "--store=s", "--jobs", "2", "--batch-mb=4"],
    ["--executor", "local", "-j", "1", "--max-line-mb", "8", "a"], ["--demo", "--quiet"], [],
])
@pytest.mark.parametrize("env_store", [None, "", "env-store"])
def test_a_command_line_the_quick_parser_answers_means_the_same_to_typer(argv, env_store, monkeypatch):
    if env_store is not None:
        monkeypatch.setenv(STORE_ENV, env_store)
    quick = program.quick_ingest_args(["ingest", *argv])
    params = INGEST.make_context("ingest", list(argv)).params
    assert quick.store == Path(params["store"] or PACKAGED_STORE)
    assert quick.as_json is params["as_json"]
    if not params["demo"]:
        assert quick.paths == tuple(Path(p) for p in params["paths"] or ())


@pytest.mark.parametrize("argv", [
    ["ingest", "a", "--pipeline", "p.toml"], ["ingest", "--pipeline=p.toml", "a"], ["ingest", "a", "--ray-address", "h:1"],
    ["ingest", "a", "--redact-style", "placeholder"], ["ingest", "--help"],
])
def test_what_only_the_full_path_answers(argv):
    assert program.quick_ingest_args(argv) is None
