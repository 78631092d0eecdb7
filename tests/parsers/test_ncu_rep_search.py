"""Finding the ncu_report module of an Nsight Compute install (used where none is pip-installed)."""

from __future__ import annotations

from gpuprof.parsers.ncu_rep import bundled_module_dirs


def test_the_toolkit_wrapper_leads_to_its_nsight_compute_folders(tmp_path):
    """/usr/local/cuda-13.0/bin/ncu is a wrapper script; the module is in nsight-compute-<ver>/extras/python."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "ncu").write_text("#!/bin/sh\n")
    for version in ("2025.1.0", "2025.3.1"):
        (tmp_path / f"nsight-compute-{version}" / "extras" / "python").mkdir(parents=True)
    (tmp_path / "opt" / "nsight-compute" / "2025.2.0" / "extras" / "python").mkdir(parents=True)
    dirs = bundled_module_dirs(str(tmp_path / "bin" / "ncu"), opt=tmp_path / "opt")
    assert dirs == (tmp_path / "bin" / "extras" / "python",
                    tmp_path / "nsight-compute-2025.3.1" / "extras" / "python",
                    tmp_path / "opt" / "nsight-compute" / "2025.2.0" / "extras" / "python",
                    tmp_path / "nsight-compute-2025.1.0" / "extras" / "python")


def test_a_linked_ncu_is_followed_to_its_install(tmp_path):
    install = tmp_path / "opt" / "nsight-compute" / "2025.3.1"
    (install / "extras" / "python").mkdir(parents=True)
    (install / "ncu").write_text("")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "ncu").symlink_to(install / "ncu")
    assert bundled_module_dirs(str(tmp_path / "bin" / "ncu"), opt=tmp_path / "none")[0] == install / "extras" / "python"
    assert bundled_module_dirs(None) == ()
