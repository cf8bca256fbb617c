"""F.roi_align and F.nms against independent pure-Python loops written from torchvision's definitions;
roi_align's backward by finite differences (burn_autodiff.gradcheck), on every available backend."""

from __future__ import annotations

import math

import burn
import burn.nn.functional as F
import numpy as np
import pytest

DEVICES = ["cpu"] + [i.name for i in burn.backends() if i.available and i.name in ("wgpu", "cuda")]


def _bilinear(img: np.ndarray, y: float, x: float) -> float:
    """torchvision's roi_align bilinear read: 0 outside [-1, H] x [-1, W], coordinates clamped to the
    image, the upper corner collapsing onto the last row/column."""
    h, w = img.shape
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return 0.0
    y, x = max(y, 0.0), max(x, 0.0)
    y_low, x_low = int(y), int(x)
    if y_low >= h - 1:
        y_high = y_low = h - 1
        y = float(y_low)
    else:
        y_high = y_low + 1
    if x_low >= w - 1:
        x_high = x_low = w - 1
        x = float(x_low)
    else:
        x_high = x_low + 1
    ly, lx = y - y_low, x - x_low
    hy, hx = 1 - ly, 1 - lx
    return (
        hy * hx * img[y_low, x_low]
        + hy * lx * img[y_low, x_high]
        + ly * hx * img[y_high, x_low]
        + ly * lx * img[y_high, x_high]
    )


def roi_align_ref(x, rois, out_size, scale, sampling_ratio, aligned):
    ph, pw = out_size
    k, c = rois.shape[0], x.shape[1]
    out = np.zeros((k, c, ph, pw))
    off = 0.5 if aligned else 0.0
    for r in range(k):
        b = int(rois[r, 0])
        sx, sy, ex, ey = (v * scale - off for v in rois[r, 1:])
        rw, rh = ex - sx, ey - sy
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / ph, rw / pw
        gh = sampling_ratio if sampling_ratio > 0 else math.ceil(rh / ph)
        gw = sampling_ratio if sampling_ratio > 0 else math.ceil(rw / pw)
        count = max(gh * gw, 1)
        for ch in range(c):
            for i in range(ph):
                for j in range(pw):
                    acc = 0.0
                    for iy in range(gh):
                        y = sy + i * bh + (iy + 0.5) * bh / gh
                        for ix in range(gw):
                            xx = sx + j * bw + (ix + 0.5) * bw / gw
                            acc += _bilinear(x[b, ch], y, xx)
                    out[r, ch, i, j] = acc / count
    return out


def _rois(rng, k, n, h, w):
    x1 = rng.uniform(-2, w - 1, k)
    y1 = rng.uniform(-2, h - 1, k)
    x2 = x1 + rng.uniform(0.2, w * 0.8, k)
    y2 = y1 + rng.uniform(0.2, h * 0.8, k)
    return np.stack([rng.integers(0, n, k).astype(np.float64), x1, y1, x2, y2], 1)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "out_size,scale,ratio,aligned",
    [((3, 3), 1.0, -1, False), ((2, 4), 0.5, 2, True), ((4, 3), 1.0, 0, True), ((1, 1), 2.0, 3, False)],
)
def test_roi_align_matches_torchvision_definition(device, out_size, scale, ratio, aligned):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 9, 11))
    rois = _rois(rng, 6, 2, 9 / scale, 11 / scale)
    expected = roi_align_ref(x, rois, out_size, scale, ratio, aligned)
    dev = burn.device(device)
    got = F.roi_align(
        burn.tensor(x, dtype=burn.float32, device=dev),
        burn.tensor(rois, dtype=burn.float32, device=dev),
        out_size,
        spatial_scale=scale,
        sampling_ratio=ratio,
        aligned=aligned,
    )
    assert got.shape == expected.shape
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-4, atol=1e-4)


def test_roi_align_takes_a_list_of_boxes_per_image():
    rng = np.random.default_rng(1)
    x = burn.from_numpy(rng.standard_normal((2, 2, 6, 6)).astype(np.float32))
    a = burn.tensor([[0.5, 0.5, 4.0, 3.0]])
    b = burn.tensor([[1.0, 1.0, 5.0, 5.0], [0.0, 2.0, 3.0, 6.0]])
    rois = burn.tensor([[0, 0.5, 0.5, 4.0, 3.0], [1, 1.0, 1.0, 5.0, 5.0], [1, 0.0, 2.0, 3.0, 6.0]])
    np.testing.assert_allclose(F.roi_align(x, [a, b], 2).numpy(), F.roi_align(x, rois, 2).numpy(), rtol=1e-6)


def test_roi_align_backward_gradcheck():
    from burn_autodiff import gradcheck

    rng = np.random.default_rng(2)
    x, rois = rng.standard_normal((2, 2, 5, 6)), _rois(rng, 4, 2, 5, 6)

    def fn(x):
        boxes = burn.tensor(rois, dtype=burn.float64, device=x.device)
        return F.roi_align(x, boxes, (2, 3), sampling_ratio=2)

    report = gradcheck(fn, [x], burn.device("cpu", autodiff=True))
    assert "roi_align" in report.rules


@pytest.mark.parametrize("device", DEVICES)
def test_roi_align_backward_matches_numpy_backend(device):
    rng = np.random.default_rng(3)
    x, rois = rng.standard_normal((2, 3, 7, 7)), _rois(rng, 5, 2, 7, 7)
    seed = rng.standard_normal((5, 3, 2, 2))
    grads = []
    for name in (device, "cpu"):
        dev = burn.device(name, autodiff=True)
        t = burn.tensor(x, dtype=burn.float32, device=dev).require_grad()
        y = F.roi_align(t, burn.tensor(rois, dtype=burn.float32, device=dev), 2, aligned=True)
        grads.append(t.grad(y.backward(burn.tensor(seed, dtype=burn.float32, device=dev))).numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-4, atol=1e-5)


def nms_ref(boxes, scores, thr):
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    keep = []
    for i in order:
        ok = True
        for j in keep:
            iw = max(0.0, min(boxes[i][2], boxes[j][2]) - max(boxes[i][0], boxes[j][0]))
            ih = max(0.0, min(boxes[i][3], boxes[j][3]) - max(boxes[i][1], boxes[j][1]))
            inter = iw * ih
            area_i = (boxes[i][2] - boxes[i][0]) * (boxes[i][3] - boxes[i][1])
            area_j = (boxes[j][2] - boxes[j][0]) * (boxes[j][3] - boxes[j][1])
            if inter / (area_i + area_j - inter) > thr:
                ok = False
                break
        if ok:
            keep.append(i)
    return keep


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("thr", [0.0, 0.3, 0.7])
def test_nms_matches_greedy_reference(device, thr):
    rng = np.random.default_rng(4)
    xy = rng.uniform(0, 50, (60, 2))
    boxes = np.concatenate([xy, xy + rng.uniform(2, 20, (60, 2))], 1)
    scores = rng.random(60)
    scores[5] = scores[7]  # a tie: the lower index goes first
    dev = burn.device(device)
    got = F.nms(
        burn.tensor(boxes, dtype=burn.float32, device=dev),
        burn.tensor(scores, dtype=burn.float32, device=dev),
        thr,
    )
    assert got.dtype.is_int and got.ndim == 1
    assert got.tolist() == nms_ref(boxes.astype(np.float32).tolist(), scores.astype(np.float32).tolist(), thr)


def test_nms_and_roi_align_bad_arguments():
    with pytest.raises(burn.ShapeError, match="boxes must be \\(N, 4\\)"):
        F.nms(burn.zeros((3, 5)), burn.zeros(3), 0.5)
    with pytest.raises(burn.ShapeError, match="scores must be \\(3,\\)"):
        F.nms(burn.zeros((3, 4)), burn.zeros(2), 0.5)
    with pytest.raises(burn.ShapeError, match="boxes must be \\(K, 5\\)"):
        F.roi_align(burn.zeros((1, 1, 4, 4)), burn.zeros((2, 4)), 2)
    with pytest.raises(ValueError, match="spatial_scale must be > 0"):
        F.roi_align(burn.zeros((1, 1, 4, 4)), burn.zeros((2, 5)), 2, spatial_scale=0)
    assert F.nms(burn.zeros((0, 4)), burn.zeros(0), 0.5).shape == (0,)
