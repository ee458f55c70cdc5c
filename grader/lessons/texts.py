"""What the lesson helpers of grader/lessons/ say: one section per helper, its templates
named by what they say (``.format(...)`` fills them in)."""

from __future__ import annotations

# --- drawings of layouts (grader/lessons/drawing.py) --------------------------------------
LAYOUT_SHAPE = "the array shape should be a tuple of whole numbers, such as (8, 4); got {shape!r}"
LAYOUT_MESH = (
    "the mesh should map each axis name to a size of at least 1, such as {{'x': 4, 'y': 2}}; "
    "got {mesh!r}"
)
LAYOUT_SPEC_TYPE = (
    "the spec should be a PartitionSpec or a tuple of entries, such as P('x', None); "
    "got {spec!r}"
)
LAYOUT_SPEC_TOO_LONG = "the spec has {entries} entr{s} but the array has {rank} {dims}"
LAYOUT_SPEC_ENTRY = "spec entry {entry!r} is not None, an axis name or a tuple of axis names"
LAYOUT_UNKNOWN_AXIS = "mesh has no axis {axis!r} (axes: {axes})"
LAYOUT_AXIS_TWICE = "axis {axis!r} is used twice: a mesh axis can split only one dimension"
LAYOUT_UNEVEN = "dimension {dim} of size {size} does not split into {parts} blocks over {axes}"
LAYOUT_DTYPE = "{dtype!r} is not a dtype that the drawing knows, such as 'float32' or 'int32'"
LAYOUT_NOT_NAMED = (
    "draw_layout draws arrays placed with a NamedSharding; this one has a {kind}: place it "
    "with jax.device_put(x, NamedSharding(mesh, P(...))) first"
)
LAYOUT_TOO_MANY_PANELS = (
    "the drawing shows one panel per block of dimension(s) {dims}, and this layout has {panels} "
    "of them (at most {max} fit): split the leading dimensions over fewer devices"
)

STRATEGIES_NONE = "strategies_figure needs, for each strategy by name, its placed arrays by name"
STRATEGIES_NAMES = "every strategy must place the same arrays, in the same order: {names}"
STRATEGIES_RANK = ("{name} has shape {shape}: a strategy's drawing shows arrays of at most 2 "
                   "dimensions")
STRATEGIES_PANEL = "{name} {spec}: {nbytes:,} B each"
STRATEGIES_ROW = "{strategy}\n{held:,} B per device"
STRATEGIES_SUMMARY = "{strategy}: {parts}; {held:,} bytes per device"

PROCESSES_POSITIONS = ("a mesh axis over processes needs one block per position 0, 1, ..., "
                       "each with its device, process and rows; got positions {got}")
PROCESSES_BAND = "process {process}: {devices} local devices"
PROCESSES_X = "position along the mesh axis {axis!r}"
PROCESSES_TITLE = "one mesh, {axis!r}: {size}, over {processes} processes"
PROCESSES_EACH = "process {process} positions {positions}, devices {devices}, rows {rows}"
PROCESSES_SUMMARY = "mesh {axis!r}: {size}: {each}"

# --- drawings of collectives (grader/lessons/collective_drawing.py) -----------------------
MOVE_KIND = "there is no drawing of {kind!r}: choose one of {kinds}"
MOVE_DEVICES = "a collective is drawn on 1 to {max} devices, not {n}"
MOVE_STEP = "step {step} does not exist: {kind} on {n} devices has steps 0 to {last}"

# --- drawings of a learner's shard_map (grader/lessons/shard_map_drawing.py) ---------------
SHARD_MAP_OUTPUT = "draw_shard_map draws a function that returns one array; {name} returned {kind}"
SHARD_MAP_TOO_BIG = (
    "draw_shard_map draws small data: a device's block has {size} elements and at most {max} "
    "fit in the drawing; pass a smaller array"
)
SHARD_MAP_INPUTS = (
    "draw_shard_map got {specs} in_specs, so it needs {specs} inputs as a tuple, one per spec; "
    "got {got}"
)
SHARD_MAP_NO_TRACE = "what moved is not drawn: {why}"
SHARD_MAP_NOT_TRACED = "JAX could not differentiate {name} on a float copy of the data ({error})"
SHARD_MAP_DIFFERS_ON_FLOATS = "{name} gives other values on a float copy of the data"

# --- compiled-code inspector (grader/lessons/inspector.py) --------------------------------
#: The footnote of the "bytes sent" column; {rules} is the rule of each collective of
#: grader.lessons.hlo.TRAFFIC_MODEL, "op rule; op rule; ...".
TRAFFIC_NOTE = (
    "bytes sent: what each device sends to the others of its group of n devices, the "
    "reductions and gathers passed around a ring, an all-to-all exchanged directly: {rules} "
    "(a model: XLA may choose another algorithm)"
)

# --- interactive explorers (grader/lessons/explorer.py) -----------------------------------
EXPLORER_CANNOT = "Cannot lay this out: {why}"
EXPLORER_SHAPE = (
    "the array shape should be 1 to {max} whole numbers separated by commas, such as 8, 6 "
    "(got {text!r})"
)
EXPLORER_SHAPE_RANGE = "each dimension of the array should be from 1 to {max} (got {size})"
EXPLORER_AXIS_NAME = (
    "mesh axis {i} needs a name that is a Python identifier, such as 'x' (got {name!r})"
)
EXPLORER_AXIS_TWICE = "two mesh axes are both named {name!r}: give each axis its own name"
EXPLORER_TOO_MANY_DEVICES = "this mesh has {n} devices; the explorer draws meshes of up to {max}"
EXPLORER_SPEC_GAP = (
    "entry {i} of the spec is empty ({omit}) but a later entry is set: write None for a "
    "dimension that is not split; only entries at the end may be left out"
)
#: What a widget is where it cannot be drawn (a notebook opened before its cell runs, a page
#: that renders notebooks): ipywidgets cuts the text at 110 characters.
EXPLORER_AS_TEXT = "The layout explorer (a widget): run this cell to draw it and try other specs."
STEPPER_AS_TEXT = "The collective stepper (a widget): run this cell to draw it and step through."
BUBBLE_AS_TEXT = "The bubble explorer (a widget): run this cell to move its sliders."
BUBBLE_CAPTION = ("GPipe forward, {stages} stages x {microbatches} microbatches: {ticks} ticks, "
                  "bubble {bubble:.1%}")
BUBBLE_NAME = "GPipe forward, {microbatches} microbatches"
EXPLORER_AXES_RANGE = "the explorer draws meshes of 1 to {max} axes, got {mesh}"
EXPLORER_SPEC_RANGE = "the explorer shows specs of up to {max} entries, got {spec}"
EXPLORER_UNKNOWN_KIND = "unknown collective {kind!r}; the explorer knows {kinds}"

# --- processes of lesson 6 (grader/lessons/cluster.py) ------------------------------------
MSG_CLUSTER_NOT_A_FUNCTION = (
    "grader.lessons.cluster sends a function's source to each process: pass a function defined "
    "with def, not a {kind}"
)
MSG_CLUSTER_CLOSURE = (
    "{name} uses {names} from the function it is defined in, which cannot be sent to other "
    "processes: define it at the top level of the notebook and pass data as arguments"
)
MSG_CLUSTER_UNSENDABLE = (
    "{program} uses `{name}` from this notebook, a {kind} that cannot be sent to other "
    "processes: pass it as an argument, or create it inside the function"
)

# --- pipeline schedules (schedule_drawing.py) ---------------------------------------------------
SCHEDULE_NONE = "schedule_figure needs at least one schedule, by name"
SCHEDULE_OP = ("schedule {name!r} has the operation {op!r}: each is (kind, microbatch), kind one "
               "of {kinds}, microbatch 0 or more")
SCHEDULE_TOO_LONG = "a schedule of {ticks} ticks is too long to draw readably (at most {most})"
SCHEDULE_TICKS = "tick"
SCHEDULE_TITLE = "{name}: idle {share:.0%} of stage-ticks (white: the bubble)"
SCHEDULE_SUMMARY = ("{name}: {stages} stages x {ticks} ticks, {busy} busy and {idle} idle "
                    "(bubble {share:.3f})")

# --- rooflines and memory per device (cost_drawing.py) -------------------------------------
ROOFLINE_INTENSITIES = ("each operation needs a positive number of FLOPs per byte, by name, "
                        "such as {{'matmul': 2730.7}}; got {got!r}")
ROOFLINE_RIDGE = "ridge {ridge:,.0f} FLOP/byte"
ROOFLINE_LABEL = "{name}: {bound}-bound"
ROOFLINE_X = "arithmetic intensity (FLOPs per byte of memory read or written)"
ROOFLINE_Y = "attainable FLOP/s"
ROOFLINE_TITLE = "{chip}: memory bandwidth limits the left, the matrix-product rate the right"
ROOFLINE_PLACED = "{name} {intensity:,.2f} FLOP/byte, {bound}-bound"
ROOFLINE_SUMMARY = "{chip}: ridge {ridge:,.0f} FLOP/byte; {placed}"
MEMORY_ARGUMENTS = "arguments"
MEMORY_OUTPUTS = "outputs (own buffers)"
MEMORY_TEMPORARIES = "temporaries"
MEMORY_PEAK = "peak"
MEMORY_X = "bytes on one device"
MEMORY_NONE = "memory_figure needs at least one program's memory_analysis figures, by name"
MEMORY_KEYS = ("a program's figures need argument, output, temp, alias and peak (bytes); "
               "{missing} missing from {got}")
MEMORY_SUMMARY = ("{name}: arguments {argument:,} B, outputs {output:,} B, temporaries "
                  "{temp:,} B, peak {peak:,} B")

# --- curves (curve_drawing.py) ---------------------------------------------------------------
CURVES_NONE = "curves_figure needs at least one curve, by name, each with at least one point"
CURVES_POINTS = "curve {name!r} should be a sequence of (x, y) pairs of finite numbers"
CURVES_EACH = "{name} {first:.4g} -> {last:.4g} ({points} points)"
CURVES_SUMMARY = "{what}: {each}; the curves differ by at most {gap:.2g}"

# --- tokens routed to experts (routing_drawing.py) -----------------------------------------
ROUTING_INPUT = ("the routing needs the experts chosen as whole numbers from 0 to experts - 1, "
                 "one row per device (at most {devices} devices, {tokens} tokens each, {most} "
                 "experts), and a capacity of 0 or more; got shape {shape}, {experts} experts, "
                 "capacity {capacity}")
ROUTING_DEVICE = "device {device} {kept} kept, {dropped} dropped"
ROUTING_SUMMARY = "capacity {capacity}: {each}; {kept} kept and {dropped} dropped in all"
ROUTING_TITLE = "device {device}: {dropped} dropped"
ROUTING_EXPERT = "expert"
ROUTING_SLOT = "slot (the line: capacity {capacity})"

# --- values per device (per_device_drawing.py) ---------------------------------------------
PER_DEVICE_NONE = "per_device_figure needs at least one panel of values, by name"
PER_DEVICE_SHAPE = ("panel {name!r} should be finite numbers, a row per device and a column per "
                    "value (at most {rows} x {columns}); got shape {shape}")
PER_DEVICE_TITLE = "{name}\n{distinct} distinct row(s) of {devices}"
PER_DEVICE_SUMMARY = "{name}: {distinct} distinct block(s) of {devices}"
