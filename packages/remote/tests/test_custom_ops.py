"""``burn.custom`` ops over burn-remote: a server whose plugin registers an op (a distribution with a
``burn`` entry point, installed into a folder on the server's ``PYTHONPATH``) runs it for a client that
defines the same op, forward and backward (autodiff on the client); an op the server lacks is a clear
error naming it."""

from __future__ import annotations

import os
import secrets
import textwrap

import burn
import numpy as np
import pytest

PLUGIN = textwrap.dedent(
    """
    import burn.custom
    from burn.plugins import hookimpl

    AXPY = burn.custom.op(
        "remote_axpy",
        kernels={"cpu": lambda x, y, a: a * x + y},
        backward=lambda ctx, g: [g * ctx.attrs["a"], g],
        register=False,
    )


    @hookimpl
    def burn_register_custom_ops(register):
        register(AXPY)
    """
)


@pytest.fixture
def plugin_server(tmp_path, start_server, monkeypatch):
    """A server with the ``remote_axpy`` op from an installed plugin distribution."""
    site = tmp_path / "site"
    info = site / "remote_ops_test-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: remote-ops-test\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[burn]\nremote_ops_test = remote_ops_test_plugin\n")
    (site / "remote_ops_test_plugin.py").write_text(PLUGIN)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    return start_server(token=secrets.token_hex(8))


@pytest.fixture
def client_ops():
    axpy = burn.custom.op(
        "remote_axpy",
        kernels={"cpu": lambda x, y, a: a * x + y},
        backward=lambda ctx, g: [g * ctx.attrs["a"], g],
    )
    only_here = burn.custom.op("remote_only_client", kernels={"cpu": lambda x: x + 1})
    yield axpy, only_here
    for op in (axpy, only_here):
        burn.custom.unregister(op.name)


def test_server_runs_a_registered_op_and_names_a_missing_one(plugin_server, client_ops):
    from burn_remote import RemoteError, remote_backend

    axpy, only_here = client_ops
    dev = burn.device("remote:7", url=plugin_server.url, token=plugin_server.token, autodiff=True)
    try:
        x = burn.tensor([1.0, -2.0, 3.0], device=dev).require_grad()
        y = burn.tensor([0.5, 0.5, 0.5], device=dev).require_grad()
        out = axpy(x, y, a=3.0)
        np.testing.assert_allclose(out.numpy(), [3.5, -5.5, 9.5])
        grads = (out * out).sum().backward()
        np.testing.assert_allclose(x.grad(grads).numpy(), 2 * 3.0 * np.array([3.5, -5.5, 9.5]))
        np.testing.assert_allclose(y.grad(grads).numpy(), 2 * np.array([3.5, -5.5, 9.5]))
        # repeated records (the client's signature fast path) carry each call's own attributes
        outs = [axpy(x, y, a=a) for _ in range(3) for a in (1.0, 2.0)]
        want = [[1.5, -1.5, 3.5], [2.5, -3.5, 6.5]] * 3
        np.testing.assert_allclose([o.numpy() for o in outs], want)
        with pytest.raises(RemoteError, match="custom op 'remote_only_client' is not registered"):
            only_here(burn.tensor([1.0], device=dev)).numpy()
    finally:
        remote_backend(dev).close()
