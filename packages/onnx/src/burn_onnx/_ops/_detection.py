"""NonMaxSuppression through burn's ``F.nms`` (the backend's greedy suppression), once per batch and
class; the candidates above ``score_threshold`` are picked on the host, as the result's length is."""

from __future__ import annotations

from typing import Any

import burn
import numpy as np
from burn.nn import functional as F

from .._graph import Node
from .._registry import attr_in, op


def _corners(boxes: burn.Tensor, center: bool) -> burn.Tensor:
    """(N, 4) boxes as (lo0, lo1, hi0, hi1): ONNX's corner pairs in any order, or centre and size.
    IoU is symmetric in the two axes, so which axis ONNX calls y does not matter."""
    a, b = boxes.narrow(1, 0, 2), boxes.narrow(1, 2, 2)
    if center:
        return burn.cat([a - b / 2, a + b / 2], 1)
    return burn.cat([a.minimum(b), a.maximum(b)], 1)


@op("NonMaxSuppression", since=10, host=(2, 3, 4), dynamic=True, check=attr_in("center_point_box", (0, 1), 0))
def non_max_suppression(
    ctx: Any,
    node: Node,
    boxes: burn.Tensor,
    scores: burn.Tensor,
    max_out: Any = None,
    iou: Any = None,
    score_min: Any = None,
) -> burn.Tensor:
    """boxes (B, N, 4), scores (B, C, N) -> (K, 3) int64 rows (batch, class, box), each class's boxes
    by decreasing score."""
    limit = max(int(ctx.scalar(max_out, 0)), 0)
    iou_threshold = float(ctx.scalar(iou, 0.0))
    threshold = ctx.scalar(score_min)
    center = bool(node.attrs.get("center_point_box", 0))
    rows: list[np.ndarray] = []
    host_scores = ctx.array(scores) if threshold is not None else None
    for b in range(boxes.shape[0] if limit else 0):
        corners = _corners(boxes.select(0, [b]).squeeze(0), center)
        for c in range(scores.shape[1]):
            class_scores = scores.select(0, [b]).select(1, [c]).reshape(-1)
            chosen = np.arange(boxes.shape[1])
            if host_scores is not None:
                chosen = np.nonzero(host_scores[b, c] > threshold)[0]
                if chosen.size == 0:
                    continue
                picked = burn.from_numpy(chosen, device=boxes.device, dtype=boxes.device.backend.default_int)
                kept = F.nms(corners.select(0, picked), class_scores.select(0, picked), iou_threshold)
            else:
                kept = F.nms(corners, class_scores, iou_threshold)
            index = chosen[np.asarray(kept.numpy(), dtype=np.int64)][:limit]
            rows.append(np.stack([np.full_like(index, b), np.full_like(index, c), index], 1))
    out = np.concatenate(rows) if rows else np.zeros((0, 3), dtype=np.int64)
    return ctx.tensor(out.astype(np.int64), burn.int64)
