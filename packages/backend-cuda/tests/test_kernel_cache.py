"""CuPy's compiled-kernel cache under burn's cache folder (no GPU needed): ``CUPY_CACHE_DIR`` is set
before CuPy is first imported unless the user set it, and ``burn autotune status`` lists the folder."""

from __future__ import annotations

import json
import os

import burn
import pytest
from burn_cuda import _probe
from burn_cuda._kernel_cache import FOLDER, use_burn_kernel_cache


def test_points_cupy_at_burns_cache_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("BURN_CACHE_DIR", str(tmp_path))
    env: dict[str, str] = {}
    assert use_burn_kernel_cache(env) == str(tmp_path / FOLDER)
    assert env == {"CUPY_CACHE_DIR": str(tmp_path / "cuda-kernels")}


def test_a_folder_the_user_chose_is_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("BURN_CACHE_DIR", str(tmp_path))
    env = {"CUPY_CACHE_DIR": "/data/my-kernels"}
    assert use_burn_kernel_cache(env) == "/data/my-kernels"
    assert env == {"CUPY_CACHE_DIR": "/data/my-kernels"}


def test_set_before_cupy_is_imported(tmp_path, monkeypatch):
    monkeypatch.setenv("BURN_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("CUPY_CACHE_DIR", raising=False)
    seen = []

    def fake_import():
        seen.append(os.environ.get("CUPY_CACHE_DIR"))
        raise ImportError("no cupy in this test")

    _probe.reset_probe()
    monkeypatch.setattr(_probe, "_import_cupy", fake_import)
    try:
        assert _probe.is_available()[0] is False
    finally:
        _probe.reset_probe()
        burn.plugins.reload()
    assert seen == [str(tmp_path / "cuda-kernels")]


def test_autotune_status_lists_the_compiled_kernels(tmp_path, monkeypatch, capsys):
    from burn._cli import main

    monkeypatch.setenv("BURN_CACHE_DIR", str(tmp_path))
    folder = tmp_path / FOLDER
    folder.mkdir()
    (folder / "a.cubin").write_bytes(b"x" * 1000)
    (folder / "b.cubin").write_bytes(b"y" * 500)
    assert main(["autotune", "status", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["kernel_caches"]
    assert listed == [{"name": "cuda-kernels", "path": str(folder), "files": 2, "bytes": 1500}]
    assert main(["autotune", "status"]) == 0
    text = capsys.readouterr().out
    assert f"compiled kernels (cuda-kernels): {folder}" in text and "2 file(s)" in text


@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_setting_counts_as_unset(tmp_path, monkeypatch, value):
    monkeypatch.setenv("BURN_CACHE_DIR", str(tmp_path))
    env = {"CUPY_CACHE_DIR": value}
    assert use_burn_kernel_cache(env) == str(tmp_path / FOLDER)
