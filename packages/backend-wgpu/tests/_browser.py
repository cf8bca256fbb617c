"""Headless Chromium with WebGPU for the web-export tests (Playwright's sync API, Debian's browser).

``find_chromium()`` looks for Debian's ``chromium-headless-shell`` (then ``chromium``) or
``BURN_CHROMIUM``; Playwright's own browser download is never used. ``Browser`` launches it with
SwiftShader's WebGPU adapter (machines without a GPU), serves a folder over http on 127.0.0.1 (a
secure context, which ``navigator.gpu`` needs) and records console messages, page errors and every
requested URL.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from pathlib import Path
from typing import Any

CANDIDATES = (
    "/usr/lib/chromium/chromium-headless-shell",
    "/usr/bin/chromium-headless-shell",
    "/usr/lib/chromium/chromium",
    "/usr/bin/chromium",
)
FLAGS = [
    "--enable-unsafe-webgpu",
    "--use-webgpu-adapter=swiftshader",
    "--no-sandbox",  # root in containers and CI
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def find_chromium() -> str | None:
    env = os.environ.get("BURN_CHROMIUM")
    if env:
        return env
    for path in CANDIDATES:
        if os.path.exists(path):
            return path
    return shutil.which("chromium-headless-shell") or shutil.which("chromium")


def unavailable() -> str | None:
    """Why the browser tests cannot run here (None when they can)."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install playwright; requirements-dev.txt has it)"
    if find_chromium() is None:
        return "no Chromium: apt-get install chromium-headless-shell (or set BURN_CHROMIUM)"
    return None


class _Quiet(http.server.SimpleHTTPRequestHandler):
    # module scripts and wasm need these types, whatever the host's mime.types says
    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".js": "text/javascript",
        ".mjs": "text/javascript",
        ".wasm": "application/wasm",
        ".json": "application/json",
    }

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        super().end_headers()


class Server:
    """http.server on 127.0.0.1 (a free port) serving ``root`` from a thread."""

    def __init__(self, root: Path) -> None:
        handler = functools.partial(_Quiet, directory=str(root))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class Browser:
    """One headless Chromium; ``open(folder, page)`` serves ``folder`` and navigates to ``page``."""

    def __init__(self) -> None:
        from playwright.sync_api import sync_playwright

        self._pw = sync_playwright().start()
        self.browser = self._pw.chromium.launch(executable_path=find_chromium(), args=FLAGS, headless=True)
        self.servers: list[Server] = []

    def open(self, root: Path, page_name: str = "index.html") -> tuple[Any, dict[str, list[str]]]:
        """A new page on ``root/page_name``; the dict collects ``console`` (type: text),
        ``errors`` (uncaught exceptions) and ``requests`` (URLs) while the page lives."""
        server = Server(root)
        self.servers.append(server)
        page = self.browser.new_page()
        log: dict[str, list[str]] = {"console": [], "errors": [], "requests": [], "base": [server.url]}
        page.on("console", lambda m: log["console"].append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda e: log["errors"].append(str(e)))
        page.on("request", lambda r: log["requests"].append(r.url))
        page.goto(f"{server.url}/{page_name}")
        return page, log

    def close(self) -> None:
        for s in self.servers:
            s.close()
        self.browser.close()
        self._pw.stop()


# Run a model in the page: load model.js next to the page, feed inputs given as plain lists (int64
# ones as BigInt64Array, to exercise that path), return outputs as plain lists plus the model's I/O.
RUN_JS = """async ([feeds, int64Inputs]) => {
  const { load } = await import("./model.js");
  const device = await (await navigator.gpu.requestAdapter()).requestDevice();
  const warnings = [];
  device.addEventListener("uncapturederror", (e) => warnings.push(e.error.message));
  device.pushErrorScope("validation");
  const model = await load({ device });
  const given = {};
  for (const [name, f] of Object.entries(feeds)) {
    const info = model.inputs.find((i) => i.name === name);
    let data;
    if (info.dtype === "float32") data = Float32Array.from(f.data);
    else if (info.dtype === "int64" && int64Inputs) data = BigInt64Array.from(f.data.map((v) => BigInt(v)));
    else if (info.dtype === "bool") data = Uint8Array.from(f.data);
    else data = Int32Array.from(f.data);
    given[name] = { data, shape: f.shape };
  }
  const copies = Object.fromEntries(Object.entries(given).map(([k, v]) => [k, v.data.slice()]));
  const out = await model.run(given);
  const again = await model.run(given);
  const err = await device.popErrorScope();
  const untouched = Object.entries(given).every(([k, v]) =>
    v.data.length === copies[k].length && v.data.every((x, i) => x === copies[k][i]));
  const result = {};
  for (const [name, o] of Object.entries(out)) {
    result[name] = { data: Array.from(o.data, Number), shape: o.shape, dtype: o.dtype, kind: o.data.constructor.name,
                     same: Array.from(again[name].data).every((x, i) => Object.is(x, o.data[i])) };
  }
  model.destroy();
  return { result, inputs: model.inputs, outputs: model.outputs, validation: err ? err.message : null,
           warnings, untouched, counts: model.counts };
}"""
