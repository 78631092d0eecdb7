"""suites/course.toml says "every family": every built-in family has a case in it."""

from __future__ import annotations

from pathlib import Path

from gpuprof.files import read_toml
from gpuprof.variants import catalog

COURSE = Path(__file__).resolve().parents[2] / "suites" / "course.toml"


def test_every_built_in_family_is_in_the_course_suite():
    cases = {case["family"] for case in read_toml(COURSE)["case"]}
    assert sorted(set(catalog.family_names()) - cases) == []
