"""Reading compiled HLO in a lesson: every collective of a program, what it moves and who
talks to whom.

This is :mod:`grader.framework.hlo`, the course's one reader of program text, under the name
the notebooks import; its docstring says how the text is read and which model of bytes sent
(:data:`TRAFFIC_MODEL`) the lessons compare programs by.
"""

from grader.framework.hlo import (
    COLLECTIVES,
    ITEMSIZE,
    TRAFFIC_MODEL,
    Collective,
    bytes_sent,
    collective_names,
    collectives,
    collectives_in_hlo,
    compiled_text,
    kept_on_one_device,
    largest_array,
    matmuls,
    mesh_axes,
    operations,
    parse,
    parse_replica_groups,
    sent_per_axis,
    traced,
    turns,
    waiting_for_transfers,
)

__all__ = ["COLLECTIVES", "ITEMSIZE", "TRAFFIC_MODEL", "Collective", "bytes_sent",
           "collective_names", "collectives", "collectives_in_hlo", "compiled_text",
           "kept_on_one_device", "largest_array", "matmuls", "mesh_axes", "operations", "parse",
           "parse_replica_groups", "sent_per_axis", "traced", "turns",
           "waiting_for_transfers"]
