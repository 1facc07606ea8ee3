"""Convolutions and pooling as ttnn ran them: their operands arrive flattened ([1, 1, N*H*W, C],
after a halo), so the image they slide over is read from the attributes (the sliding window
config: batch, input size, window, stride, padding, dilation; a convolution's input shape, output
channels and groups) and the op is built over it in NHWC, as TTIR writes it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from tilescope.compiler.profiles.matmul_configs import conv_blocks
from tilescope.compiler.profiles.replay_model import Built, NotBuilt, OneOp, mlir_dtype
from tilescope.compiler.profiles.report import ReportOp
from tilescope.compiler.targets.chip import Target

WINDOW_KEYS = ("sliding_window_config", "sliding_window_config_", "config")
_PAIR = r"\((\d{1,6});\s?(\d{1,6})\)"
_FIELDS = {
    "batch": re.compile(r"batch_size=(\d{1,6})"),
    "input": re.compile(r"input_hw=" + _PAIR),
    "window": re.compile(r"window_hw=" + _PAIR),
    "stride": re.compile(r"stride_hw=" + _PAIR),
    "dilation": re.compile(r"dilation_hw=" + _PAIR),
}
_PADDING = re.compile(r"padding=\(\((\d{1,6});\s?(\d{1,6})\);\s?\((\d{1,6});\s?(\d{1,6})\)\)|padding=" + _PAIR)
_ACT_H = re.compile(r"act_block_h_ntiles=(\d{1,6})\b")
_ACT_W = re.compile(r"act_block_w_ntiles=(\d{1,6})\b")
_INPUT_SHAPE = re.compile(r"\{(\d{1,7});\s?(\d{1,7});\s?(\d{1,7});\s?(\d{1,7})\}")
_INT = re.compile(r"\d{1,7}")


@dataclass(frozen=True)
class Window:
    """A sliding window over an N x H x W image: its size, stride, padding (top, bottom, left,
    right) and dilation, and the output size they give."""

    batch: int
    height: int
    width: int
    window: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int, int, int]
    dilation: tuple[int, int]

    @property
    def out_hw(self) -> tuple[int, int]:
        def out(size: int, pad: int, window: int, stride: int, dilation: int) -> int:
            return (size + pad - dilation * (window - 1) - 1) // stride + 1

        top, bottom, left, right = self.padding
        return (
            out(self.height, top + bottom, self.window[0], self.stride[0], self.dilation[0]),
            out(self.width, left + right, self.window[1], self.stride[1], self.dilation[1]),
        )

    def props(self) -> str:
        """The window as TTIR's pooling and convolution ops spell it."""
        return (
            f"dilation = array<i32: {self.dilation[0]}, {self.dilation[1]}>, "
            f"padding = array<i32: {', '.join(map(str, self.padding))}>, "
            f"stride = array<i32: {self.stride[0]}, {self.stride[1]}>"
        )


def window_of(attributes: Mapping[str, str]) -> Window:
    """The sliding window an op's attributes name; NotBuilt when they name none."""
    text = next((attributes[k] for k in WINDOW_KEYS if "SlidingWindowConfig" in attributes.get(k, "")), "")
    found = {name: pattern.search(text) for name, pattern in _FIELDS.items()}
    missing = [name for name in ("batch", "input", "window", "stride") if found[name] is None]
    if missing:
        raise NotBuilt(f"no sliding window {missing[0]} in the attributes")
    pads = _PADDING.search(text)
    padding = tuple(int(v) for v in pads.groups() if v is not None) if pads else (0, 0)
    if len(padding) == 2:
        padding = (padding[0], padding[0], padding[1], padding[1])

    def pair(name: str, default: tuple[int, int] = (1, 1)) -> tuple[int, int]:
        match = found[name]
        return (int(match[1]), int(match[2])) if match else default

    window = Window(int(found["batch"][1]), *pair("input"), pair("window"), pair("stride"), padding, pair("dilation"))
    if min(window.stride + window.window + window.dilation) < 1 or min(window.out_hw) < 1:
        raise NotBuilt(f"sliding window {window.window} over {window.height}x{window.width} gives no output")
    return window


def conv2d(op: ReportOp, kind: str, target: Target) -> Built:
    """A convolution over the input the attributes name (NHWC), with weights O x I/groups x Kh x Kw."""
    window = window_of(op.attributes)
    model = OneOp(op)
    if len(model.inputs) < 2:
        raise NotBuilt("conv2d needs its input and weights")
    shape = _INPUT_SHAPE.search(op.attributes.get("input_tensor_shape", ""))
    channels = int(shape[4]) if shape else op.inputs[model.inputs[0]].shape[-1]
    out_channels = _int(op.attributes.get("output_channels", "")) or op.outputs[0].shape[-1]
    groups = _int(op.attributes.get("groups", "")) or 1
    if channels % groups or out_channels % groups:
        raise NotBuilt(f"{channels} input and {out_channels} output channels in {groups} groups")
    b = model.builder
    source, weights = (op.inputs[i] for i in model.inputs[:2])
    x = b.arg("image", (window.batch, window.height, window.width, channels), mlir_dtype(source.dtype))
    w = b.arg("weight", (out_channels, channels // groups, *window.window), mlir_dtype(weights.dtype))
    oh, ow = window.out_hw
    props = (
        f"batch_dim = 0 : i64, channel_dim = 3 : i64, {window.props()}, groups = {groups} : i32, "
        "height_dim = 1 : i64, width_dim = 2 : i64" + _act_block(op.attributes)
    )
    props = ", ".join([props, *conv_blocks(op.attributes)])
    out = b.op("conv2d", [x, w], (window.batch, oh, ow, out_channels), mlir_dtype(op.outputs[0].dtype), "op", props)
    return _windowed(model, kind, out, model.inputs[:2], target, op, window.batch * oh * ow * out_channels)


def pool2d(op: ReportOp, kind: str, target: Target) -> Built:
    """Max or average pooling over the image the sliding window names, in NHWC."""
    window = window_of(op.attributes)
    model = OneOp(op)
    if not model.inputs:
        raise NotBuilt("pooling needs its input")
    source = op.inputs[model.inputs[0]]
    channels = source.shape[-1]
    x = model.builder.arg("image", (window.batch, window.height, window.width, channels), mlir_dtype(source.dtype))
    oh, ow = window.out_hw
    props = f"ceil_mode = false, kernel = array<i32: {window.window[0]}, {window.window[1]}>, {window.props()}"
    out = model.builder.op(kind, [x], (window.batch, oh, ow, channels), mlir_dtype(op.outputs[0].dtype), "op", props)
    return _windowed(model, kind, out, model.inputs[:1], target, op, window.batch * oh * ow * channels)


def _windowed(model: OneOp, kind: str, out: str, operands, target: Target, op: ReportOp, elements: int) -> Built:
    """The built op, with a note when the window's output differs from what the report measured."""
    measured = op.outputs[0].elements if op.outputs else 0
    notes = ()
    if measured and measured != elements:
        notes = (f"the sliding window gives {elements:,} output elements, the report {measured:,}",)
    return model.done(kind, [out], operands, target, notes)


def _act_block(attributes) -> str:
    """The activation block the conv ran with (rows and K step, in tiles), as an attribute."""
    config = attributes.get("block_config", "")
    h, w = _ACT_H.search(config), _ACT_W.search(config)
    return f", act_block = array<i64: {h[1]}, {w[1]}>" if h and w else ""


def _int(text: str) -> int:
    found = _INT.fullmatch(text.strip())
    return int(found[0]) if found else 0
