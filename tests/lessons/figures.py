"""Reading the course's drawings back in tests: artists by gid, the values drawn on each
device, arrows and their paths, cells and what a path crosses."""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import AxisType
from matplotlib.patches import Rectangle

N = 4
#: What a drawing's empty (dashed) before cell is given in the JAX run: if a drawn result
#: used it, the result would show it.
UNUSED = -1000


def ring_mesh():
    """A ring of N devices, axis "i"."""
    return jax.make_mesh((N,), ("i",), axis_types=(AxisType.Auto,), devices=jax.devices()[:N])


def by_gid(fig):
    found = {}
    for ax in fig.axes:
        for artist in [*ax.patches, *ax.texts, *ax.lines]:
            if artist.get_gid():
                found.setdefault(artist.get_gid(), []).append(artist)
    return found


def drawn(fig, side, devices):
    """The values drawn on each device's side ('before' or 'after'), None for an empty slot."""
    artists = by_gid(fig)
    rows = []
    for d in devices:
        slots = sorted(int(g.rsplit("-", 1)[1]) for g in artists if g.startswith(f"{side}-{d}-"))
        rows.append([int(artists[f"value-{side}-{d}-{j}"][0].get_text())
                     if f"value-{side}-{d}-{j}" in artists else None for j in slots])
    return rows


def arrows(fig):
    return {a.get_gid(): a for ax in fig.axes for a in ax.texts
            if (a.get_gid() or "").startswith("arrow-")}


def path(fig, gid):
    """Every point an arrow passes through, from where it starts to the tip of its head."""
    artists = by_gid(fig)
    (head,) = artists[gid]
    route = artists.get(gid.replace("arrow-", "route-", 1))
    points = [tuple(p) for p in route[0].get_xydata()] if route else [tuple(head.xyann)]
    return [*points, tuple(head.xy)]


def cells(fig):
    """gid -> (x0, y0, x1, y1) of every before and after cell."""
    return {gid: (p.get_x(), p.get_y(), p.get_x() + p.get_width(), p.get_y() + p.get_height())
            for gid, (p, *_) in by_gid(fig).items()
            if gid.startswith(("before-", "after-")) and isinstance(p, Rectangle)}


def holding(boxes, point, inside=False):
    """The cells that contain ``point`` (on their edge too, unless ``inside``)."""
    x, y = point
    margin = 1e-6 if inside else -1e-9
    return {gid for gid, (x0, y0, x1, y1) in boxes.items()
            if x0 + margin <= x <= x1 - margin and y0 + margin <= y <= y1 - margin}


def crossed(boxes, points, allowed):
    """The cells other than ``allowed`` that a polyline through ``points`` passes inside."""
    found = set()
    for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False):
        for t in np.linspace(0, 1, 60):
            found |= holding(boxes, (x0 + t * (x1 - x0), y0 + t * (y1 - y0)), inside=True)
    return found - set(allowed)
