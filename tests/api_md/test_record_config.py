"""API.md, record, config: save/load and bytes of a module's record, Config as JSON."""

from __future__ import annotations

import json
from dataclasses import field

import burn
import numpy as np
import pytest
from burn import nn
from burn_api_md._helpers import CPU, _Net


def test_record_save_load_bytes(tmp_path):
    burn.seed(6)
    model = _Net(CPU)
    path = burn.record.save(model, tmp_path / "net.safetensors")
    fresh = _Net(CPU)
    loaded = burn.record.load(fresh, path)
    for name, arr in model.record().items():
        np.testing.assert_array_equal(loaded.record()[name], arr)
    data = burn.record.to_bytes(model)
    assert isinstance(data, bytes)
    again = burn.record.from_bytes(_Net(CPU), data)
    for name, arr in model.record().items():
        np.testing.assert_array_equal(again.record()[name], arr)
    with pytest.raises(burn.RecordError):
        burn.record.from_bytes(nn.LinearConfig(3, 5).init(CPU), data)


class _TinyConfig(burn.config.Config):
    width: int = 8
    rate: float = 0.1
    name: str = "tiny"
    linear: nn.LinearConfig = field(default_factory=lambda: nn.LinearConfig(2, 3))


def test_config_save_load_to_json(tmp_path):
    cfg = _TinyConfig(width=3, linear=nn.LinearConfig(4, 5, bias=False))
    doc = json.loads(cfg.to_json())
    assert doc["width"] == 3 and doc["linear"]["d_input"] == 4 and doc["linear"]["bias"] is False
    path = tmp_path / "tiny.json"
    cfg.save(path)
    back = _TinyConfig.load(path)
    assert back == cfg and isinstance(back.linear, nn.LinearConfig)
