"""Generated-kernel snapshots (STYLE.md): the WGSL of every table entry is stored in
``snapshots/wgsl_kernels.json`` so a refactor cannot silently change a kernel. After an intended
change, regenerate with ``BURN_UPDATE_SNAPSHOTS=1 pytest packages/backend-wgpu/tests`` and review the
diff. Each kernel must also pass the adapter's WGSL validation (naga), including the ones no
numerical test reaches."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).parent
_SNAPSHOT = _HERE / "snapshots" / "wgsl_kernels.json"


def _catalog() -> dict[str, str]:
    name = "burn_wgpu_tests_kernel_catalog"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, _HERE / "_kernel_catalog.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name].catalog()


def test_kernels_match_snapshot():
    current = _catalog()
    if os.environ.get("BURN_UPDATE_SNAPSHOTS") == "1" or not _SNAPSHOT.exists():
        _SNAPSHOT.parent.mkdir(exist_ok=True)
        _SNAPSHOT.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n")
    stored = json.loads(_SNAPSHOT.read_text())
    added = sorted(set(current) - set(stored))
    removed = sorted(set(stored) - set(current))
    changed = sorted(k for k in set(current) & set(stored) if current[k] != stored[k])
    assert not (added or removed or changed), (
        f"generated WGSL differs from {_SNAPSHOT.name}: changed {changed[:10]}, added {added[:10]}, "
        f"removed {removed[:10]} (regenerate with BURN_UPDATE_SNAPSHOTS=1 after reviewing)"
    )
    assert len(stored) > 150


def test_every_kernel_validates(backend):
    device = backend.ctx.device
    failures = []
    for name, source in _catalog().items():
        if "enable f16;" in source and "shader-f16" not in backend.ctx.features:
            continue
        try:
            device.create_shader_module(label=name, code=source)
        except Exception as exc:  # collect them all: one message lists every broken kernel
            failures.append(f"{name}: {str(exc).splitlines()[-1] if str(exc) else exc}")
    if failures:
        pytest.fail("WGSL validation failed:\n" + "\n".join(failures[:20]))
