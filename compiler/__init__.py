"""tilescope's embedded compiler: import MLIR, lower it through named levels, simulate it on a target."""
