"""What a run trains on, in words: backend, adapter (and whether it is software), precision, ranks.

One line for the start line, the dashboard, experiment.log and summary.json, so a run that picked a
software GPU adapter (lavapipe, llvmpipe, SwiftShader: slower than the numpy backend) says so."""

from __future__ import annotations

from typing import Any

_SOFTWARE = ("llvmpipe", "lavapipe", "swiftshader", "softpipe", "microsoft basic render")


def _adapter(backend: Any) -> str:
    """The hardware behind a backend, where it says (wgpu's adapter label), else ''; for burn-remote,
    the server's device, its adapter and where it is (``wgpu:0 (NVIDIA H200 (...)) at ws://gpu-box:3000``)."""
    seen = set()
    while backend is not None and id(backend) not in seen:
        seen.add(id(backend))
        server = getattr(backend, "server", None)
        if isinstance(server, dict) and server.get("device"):
            adapter = server.get("adapter") or ("numpy" if server.get("backend") == "ndarray" else "")
            served = str(server["device"]).split("+")[0] + (f" ({adapter})" if adapter else "")
            return f"{served} at {getattr(backend, 'url', '?')}"
        label = getattr(getattr(backend, "ctx", None), "label", None)
        if isinstance(label, str) and label:
            return label
        name = getattr(backend, "device_name", None)
        if isinstance(name, str) and name:
            return name
        backend = getattr(backend, "inner", None)
    return ""


def is_software(label: str) -> bool:
    """Whether an adapter label names a CPU rasteriser rather than a GPU."""
    low = label.lower()
    return any(s in low for s in _SOFTWARE) or ", cpu)" in low  # wgpu's label ends "(Vulkan, CPU)"


def describe_device(device: Any) -> str:
    """``wgpu:0 (llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan, CPU), software)`` / ``cpu (numpy)``."""
    name = str(getattr(device, "inner", device)).split("+")[0]
    backend = getattr(device, "backend", None)
    adapter = _adapter(backend)
    if not adapter and name.split(":")[0] == "cpu":
        adapter = "numpy"
    if adapter and is_software(adapter):
        adapter += ", software"
    return f"{name} ({adapter})" if adapter else name


def compact_device(text: str) -> str:
    """``wgpu:0 (llvmpipe, software), float32`` from ``wgpu:0 (llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan,
    CPU), software), float32``: the run's description without the details nested inside an adapter's
    parentheses, for places narrower than the full line (the dashboard)."""
    out, depth = [], 0
    for char in text:
        if char == "(":
            depth += 1
        if depth < 2:
            out.append(char)
        if char == ")":
            depth = max(depth - 1, 0)
    return " ".join("".join(out).split()).replace(" ,", ",").replace(" )", ")")


def describe_run(devices: list[Any], precision: str = "float32", rank: int = 0, world: int = 1) -> str:
    """``cpu (numpy), float32`` or ``cuda:0 (NVIDIA H200), cuda:1 (...), float16 mixed precision, rank 0
    of 2``: the devices, the precision and, for a job of several processes, this process's rank."""
    parts = [", ".join(describe_device(d) for d in devices) or "the model's device"]
    parts.append(precision if precision == "float32" else f"{precision} mixed precision")
    if world > 1:
        parts.append(f"rank {rank} of {world}")
    return ", ".join(parts)
