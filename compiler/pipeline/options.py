"""The compiler's front options: the layout policies a run may be compiled under, and how much of
a core's L1 tensors may take. Named here, not in the pass that applies them, so the command line,
the app and override checks depend on the compiler's options and not on a pass."""

DEFAULT_POLICY = "dram-interleaved"  # every tensor interleaved in DRAM
GREEDY_L1 = "greedy-l1"  # each output sharded in L1 while what is live fits (passes/layout.py)
# tt-mlir's optimizer as production runs it: greedy-l1 for activations, and weights stored in the
# target's 8-bit block floating point where it has one (tt-mlir's experimental-bfp8-weights)
OPTIMIZER = "optimizer"
POLICIES = (DEFAULT_POLICY, GREEDY_L1, OPTIMIZER)
# Share of each core's L1 that tensors may take; the rest is left for circular buffers.
# tt-mlir calls this tensor-l1-usage-cap.
DEFAULT_L1_USAGE_CAP = 0.8
