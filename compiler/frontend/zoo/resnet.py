"""ResNet (50 by default, other depths by `layers`), NHWC as TTIR's conv2d takes it."""

from __future__ import annotations

from tilescope.compiler.errors import ModelLoadError
from tilescope.compiler.frontend.zoo.builder import MlirBuilder

RESNET_STAGES = {50: (3, 4, 6, 3), 101: (3, 4, 23, 3), 152: (3, 8, 36, 3), 200: (3, 24, 36, 3)}


def resnet_stages(depth: int) -> tuple[int, ...]:
    """Bottleneck blocks per stage of a ResNet of `depth` layers (3 per block, plus stem and fc).
    The torchvision depths use their configurations; others grow or shrink stage 2 (as 101 and 152
    do), then the largest stages, keeping at least one block per stage."""
    if depth in RESNET_STAGES:
        return RESNET_STAGES[depth]
    blocks, rest = divmod(depth - 2, 3)
    if rest or blocks < 4:
        raise ModelLoadError(
            f"parameter layers is the ResNet depth, 3n+2 for n >= 4 bottleneck blocks "
            f"(e.g. 14, 50, 101, 152), got {depth}"
        )
    counts = [3, 4, 6, 3]
    if blocks >= 16:
        counts[2] += blocks - 16
    while sum(counts) > blocks:
        counts[counts.index(max(counts))] -= 1
    return tuple(counts)


def resnet50(batch: int = 8, size: int = 224, layers: int = 50, dtype: str = "bf16") -> str:
    """ResNet-50 v1.5 in NHWC: stem conv 7x7/2, batch norm, relu, max pool 3x3/2; bottleneck stages
    of widths 64/128/256/512 (x4 out) with a projection shortcut (and the stride, on the 3x3 conv) in
    each stage's first block; global average pool (a sum and a multiply, as exports spell it); fc."""
    b = MlirBuilder()
    x = b.arg("pixel_values", (batch, size, size, 3), dtype, "input")
    x = _conv_bn(b, x, 64, 7, 2, 3, "resnet.stem.conv", "resnet.stem.bn")
    x = b.op("relu", [x], b.shape(x), dtype, "resnet.stem.relu")
    x = b.max_pool2d(x, "resnet.stem.maxpool", kernel=3, stride=2, padding=1)
    for s, blocks in enumerate(resnet_stages(layers)):
        width = 64 << s
        for i in range(blocks):
            x = _bottleneck(b, x, width, 2 if s and not i else 1, f"resnet.stage.{s}.block.{i}")
    n, h, w, c = b.shape(x)
    x = b.reduce("sum", x, (1, 2), "resnet.pool.sum")
    scale = b.constant(1 / (h * w), (n, c), dtype, "resnet.pool.scale_factor")
    x = b.eltwise("multiply", [x, scale], "resnet.pool.mean")
    logits = _dense_1d_bias(b, x, 1000, "resnet.fc")
    return b.text([logits])


def _conv_bn(b: MlirBuilder, x: str, out: int, kernel: int, stride: int, padding: int, conv: str, bn: str) -> str:
    dtype = b.dtype(x)
    w = b.arg(f"{conv}.weight", (out, b.shape(x)[3], kernel, kernel), dtype, "parameter")
    y = b.conv2d(x, w, conv, stride=stride, padding=padding)
    # the running statistics are registered buffers, not parameters, as exports mark them
    params = [b.arg(f"{bn}.{p}", (out,), dtype, "parameter") for p in ("weight", "bias")]
    params += [b.arg(f"{bn}.{p}", (out,), dtype, "constant") for p in ("running_mean", "running_var")]
    return b.batch_norm(y, params, bn)


def _bottleneck(b: MlirBuilder, x: str, width: int, stride: int, scope: str) -> str:
    dtype = b.dtype(x)
    out = width * 4
    y = _conv_bn(b, x, width, 1, 1, 0, f"{scope}.conv1", f"{scope}.bn1")
    y = b.op("relu", [y], b.shape(y), dtype, f"{scope}.relu1")
    y = _conv_bn(b, y, width, 3, stride, 1, f"{scope}.conv2", f"{scope}.bn2")
    y = b.op("relu", [y], b.shape(y), dtype, f"{scope}.relu2")
    y = _conv_bn(b, y, out, 1, 1, 0, f"{scope}.conv3", f"{scope}.bn3")
    if stride != 1 or b.shape(x)[3] != out:
        x = _conv_bn(b, x, out, 1, stride, 0, f"{scope}.shortcut.conv", f"{scope}.shortcut.bn")
    y = b.eltwise("add", [y, x], f"{scope}.residual_add")
    return b.op("relu", [y], b.shape(y), dtype, f"{scope}.relu3")


def _dense_1d_bias(b: MlirBuilder, x: str, out: int, scope: str) -> str:
    """The classifier as the ResNet export spells it: weight transposed, dot_general, bias
    reshaped to 1xN and broadcast over the batch."""
    rows, width = b.shape(x)
    dtype = b.dtype(x)
    w = b.permute(b.arg(f"{scope}.weight", (out, width), dtype, "parameter"), (1, 0), f"{scope}.weight.transpose")
    y = b.dot_general(x, w, f"{scope}.matmul")
    c = b.reshape(b.arg(f"{scope}.bias", (out,), dtype, "parameter"), (1, out), f"{scope}.bias.reshape")
    c = b.broadcast(c, (rows, out), f"{scope}.bias.broadcast")
    return b.eltwise("add", [y, c], f"{scope}.bias_add")
