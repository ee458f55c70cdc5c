"""Tokens routed to experts, and those dropped at capacity, drawn for lesson 10.

:func:`routing_figure` draws, for each device, the buffers it fills: a column per expert, a row
per slot, each token in the slot it takes (the number of earlier tokens of that device that chose
the same expert), in its device's colour while the slot is below the capacity and, past it,
as a dropped token: a white cell with a dashed edge and a cross. A line marks the capacity.
:func:`slots` computes the slots, as the lesson's ``slots`` does with ``jnp``, and
:func:`routing_summary` gives the one line a reader without the picture gets.

Artists carry gids for tests: ``token-{device}-{token}`` for a kept token's cell,
``dropped-{device}-{token}`` for a dropped one's, ``capacity-{device}`` for the line; each
device's axes has the gid ``routing-{device}``.
"""

from __future__ import annotations

import numpy as np
from matplotlib.patches import Rectangle

from grader.lessons import texts
from grader.lessons.drawing import Drawing
from grader.palette import device_colour

#: The most devices, experts and tokens per device a drawing shows readably.
MAX_DEVICES, MAX_EXPERTS, MAX_TOKENS = 16, 16, 64


def slots(expert_ids: np.ndarray) -> np.ndarray:
    """Each token's slot: how many earlier tokens of its row (device) chose its expert."""
    ids = np.asarray(expert_ids)
    found = np.zeros(ids.shape, dtype=int)
    for row in range(ids.shape[0]):
        seen: dict[int, int] = {}
        for t, e in enumerate(ids[row]):
            found[row, t] = seen.get(int(e), 0)
            seen[int(e)] = found[row, t] + 1
    return found


def _checked(expert_ids, n_experts: int, capacity: int) -> np.ndarray:
    ids = np.asarray(expert_ids)
    if (ids.ndim != 2 or not np.issubdtype(ids.dtype, np.integer) or ids.size == 0
            or ids.min() < 0 or ids.max() >= n_experts or capacity < 0
            or ids.shape[0] > MAX_DEVICES or n_experts > MAX_EXPERTS
            or ids.shape[1] > MAX_TOKENS):
        raise ValueError(texts.ROUTING_INPUT.format(shape=ids.shape, experts=n_experts,
                                                    capacity=capacity, devices=MAX_DEVICES,
                                                    most=MAX_EXPERTS, tokens=MAX_TOKENS))
    return ids


def routing_summary(expert_ids, n_experts: int, capacity: int) -> str:
    """One line: per device, the tokens kept and dropped; then the totals."""
    ids = _checked(expert_ids, n_experts, capacity)
    kept = slots(ids) < capacity
    each = ", ".join(texts.ROUTING_DEVICE.format(device=d, kept=int(k.sum()),
                                                 dropped=int((~k).sum()))
                     for d, k in enumerate(kept))
    return texts.ROUTING_SUMMARY.format(capacity=capacity, each=each, kept=int(kept.sum()),
                                        dropped=int((~kept).sum()))


def routing_figure(expert_ids, n_experts: int, capacity: int) -> Drawing:
    """Each device's buffers, side by side: ``expert_ids[d, t]`` is the expert token ``t`` of
    device ``d`` chose."""
    ids = _checked(expert_ids, n_experts, capacity)
    slot = slots(ids)
    rows = max(int(slot.max()) + 1, capacity)
    devices = ids.shape[0]
    fig = Drawing(figsize=(min(1.2 + devices * (0.25 * n_experts + 0.3), 12),
                           1.4 + 0.25 * rows), layout="constrained")
    axes = fig.subplots(1, devices, squeeze=False, sharey=True)[0]
    for d, ax in enumerate(axes):
        ax.set_gid(f"routing-{d}")
        for t, (e, s) in enumerate(zip(ids[d], slot[d], strict=True)):
            if s < capacity:
                ax.add_patch(Rectangle((e, s), 1, 1, facecolor=device_colour(d),
                                       edgecolor="white", gid=f"token-{d}-{t}"))
            else:
                ax.add_patch(Rectangle((e, s), 1, 1, facecolor="white", edgecolor="#b3261e",
                                       linestyle="--", gid=f"dropped-{d}-{t}"))
                ax.plot([e + 0.2, e + 0.8], [s + 0.2, s + 0.8], color="#b3261e", linewidth=1)
                ax.plot([e + 0.2, e + 0.8], [s + 0.8, s + 0.2], color="#b3261e", linewidth=1)
        ax.axhline(capacity, color="black", linewidth=1.2, gid=f"capacity-{d}")
        ax.set_xlim(0, n_experts)
        ax.set_ylim(rows, 0)
        ax.set_xticks([e + 0.5 for e in range(n_experts)], [str(e) for e in range(n_experts)],
                      fontsize=6)
        ax.set_yticks([s + 0.5 for s in range(rows)], [str(s) for s in range(rows)],
                      fontsize=7)
        ax.set_title(texts.ROUTING_TITLE.format(device=d, dropped=int((slot[d] >= capacity).sum())),
                     fontsize=8)
        ax.set_xlabel(texts.ROUTING_EXPERT, fontsize=7)
    axes[0].set_ylabel(texts.ROUTING_SLOT.format(capacity=capacity), fontsize=8)
    return fig
