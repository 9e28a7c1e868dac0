from pathlib import Path

import pytest

from evalward.loaders.discovery import discover, eval_set_stem, is_eval_file_name


def _touch(root: Path, *names: str) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("[]")


def test_directories_are_searched_recursively_for_eval_file_names(tmp_path: Path) -> None:
    _touch(
        tmp_path,
        "b/z.test.json",
        "a.evalset.json",
        "b/test_config.json",
        "c/d.eval.jsonl",
        "c/e.eval.yaml",
        "c/f.eval.yml",
        "c/g.eval.json",
        "notes.json",
        "run.evalset_result.json",
        ".hidden/h.test.json",
        "node_modules/pkg/i.test.json",
        ".venv/lib/j.test.json",
        "venv/k.test.json",
    )
    found = discover([tmp_path])
    assert [p.relative_to(tmp_path).as_posix() for p, _ in found.files] == [
        "a.evalset.json",
        "b/z.test.json",
        "c/d.eval.jsonl",
        "c/e.eval.yaml",
        "c/f.eval.yml",
        "c/g.eval.json",
    ]
    assert found.problems == []


def test_explicit_files_of_any_name_are_taken_once(tmp_path: Path) -> None:
    _touch(tmp_path, "data/cases.txt", "data/x.test.json")
    explicit = tmp_path / "data/cases.txt"
    found = discover([explicit, tmp_path / "data", tmp_path / "data/x.test.json"])
    assert [shown for _, shown in found.files] == [str(explicit), str(tmp_path / "data/x.test.json")]


def test_missing_paths_are_problems_and_empty_directories_warnings(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    found = discover([tmp_path / "nope.test.json", tmp_path / "empty"])
    [problem] = found.problems
    assert (problem.path, problem.message) == (str(tmp_path / "nope.test.json"), "no such file or directory")
    [warning] = found.warnings
    assert warning.startswith(f"{tmp_path / 'empty'}: no eval files found")


@pytest.mark.parametrize(
    ("name", "stem"),
    [
        ("roll_die.test.json", "roll_die"),
        ("music.eval.yaml", "music"),
        ("router.eval.jsonl", "router"),
        ("diner.evalset.json", "diner"),
        ("DATA.TEST.JSON", "DATA"),
        ("data.jsonl", "data"),
        ("cases", "cases"),
    ],
)
def test_eval_set_stem(name: str, stem: str) -> None:
    assert eval_set_stem(name) == stem


def test_is_eval_file_name() -> None:
    assert is_eval_file_name("a.test.json")
    assert not is_eval_file_name("test_config.json")
    assert not is_eval_file_name("a.json")
