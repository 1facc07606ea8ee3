"""The aten ops of convolutional and attention layers as TTIR ops: convolution, batch norm and
pooling channels-last (N, H, W, C, as TTIR takes them), attention whole, as
`scaled_dot_product_attention`."""

from __future__ import annotations

from tilescope.compiler.frontend.torch_rules import Call, Translation, Value, rule
from tilescope.compiler.frontend.torch_rules import channels_last, fit, logical, shape_of, to_nhwc, value


def _pair(values: object, default: int) -> tuple[int, int]:
    items = list(values) if isinstance(values, (list, tuple)) else [values if values is not None else default]
    items = [int(v) for v in items] or [default]
    return (items[0], items[-1])


@rule("convolution")
def convolution(tr: Translation, call: Call) -> Value:
    """A 2-D convolution: the activation channels-last, the weight as torch holds it (O, I, H, W)."""
    x, weight, bias = call.args[:3]
    stride, padding, dilation = (_pair(call.args[i], d) for i, d in ((3, 1), (4, 0), (5, 1)))
    transposed, groups = call.args[6], call.args[8]
    if len(x.shape) != 4 or transposed or groups != 1 or dilation != (1, 1):
        raise tr.error("only 2-D convolutions of one group, not transposed or dilated, are supported")
    if stride[0] != stride[1] or padding[0] != padding[1]:
        raise tr.error(f"a convolution of stride {stride} and padding {padding} (tilescope takes square ones)")
    x = to_nhwc(tr, x, call.loc)
    w = fit(tr, weight, weight.shape, x.dtype, f"{call.loc}.weight")
    y = tr.builder.conv2d(x.ssa, w, call.loc, stride[0], padding[0])
    shape = shape_of(call.out)
    if isinstance(bias, Value):
        b = tr.builder.reshape(bias.ssa, (1, 1, 1, bias.shape[0]), f"{call.loc}.bias.reshape")
        b = tr.builder.typecast(b, x.dtype, f"{call.loc}.bias.typecast")
        b = tr.builder.broadcast(b, channels_last(shape), f"{call.loc}.bias.broadcast")
        y = tr.builder.eltwise("add", [y, b], f"{call.loc}.bias_add")
    return value(tr, y, shape, nhwc=True)


@rule("_native_batch_norm_legit_no_training")
def batch_norm(tr: Translation, call: Call) -> tuple:
    x, weight, bias, mean, var = call.args[:5]
    if not isinstance(x, Value) or len(x.shape) != 4:
        raise tr.error("batch norm of other than an N, C, H, W tensor is not supported")
    if not all(isinstance(p, Value) for p in (weight, bias, mean, var)):
        raise tr.error("a batch norm without its weight, bias and running statistics is not supported")
    x = to_nhwc(tr, x, call.loc)
    params = [p.ssa for p in (weight, bias, mean, var)]
    return (value(tr, tr.builder.batch_norm(x.ssa, params, call.loc, 3), x.shape, nhwc=True), None, None)


@rule("max_pool2d_with_indices", "max_pool2d")
def max_pool(tr: Translation, call: Call) -> tuple | Value:
    x = to_nhwc(tr, call.args[0], call.loc)
    kernel = _pair(call.arg(1, "kernel_size"), 1)
    stride = _pair(call.arg(2, "stride") or kernel, 1)
    padding = _pair(call.arg(3, "padding", 0), 0)
    if len({kernel[0], kernel[1]}) != 1 or stride[0] != stride[1] or padding[0] != padding[1]:
        raise tr.error("a max pool of other than square windows, strides and padding is not supported")
    if _pair(call.arg(4, "dilation", 1), 1) != (1, 1) or call.arg(5, "ceil_mode", False):
        raise tr.error("a max pool dilated or in ceil mode is not supported")
    out = call.out[0] if isinstance(call.out, (list, tuple)) else call.out
    y = value(tr, tr.builder.max_pool2d(x.ssa, call.loc, kernel[0], stride[0], padding[0]), shape_of(out), nhwc=True)
    return (y, None) if call.name.endswith("indices") else y


@rule("_adaptive_avg_pool2d", "adaptive_avg_pool2d")
def global_average(tr: Translation, call: Call) -> Value:
    """An adaptive average pool to 1 x 1, a ResNet's head: the mean over the image."""
    if tuple(call.args[1]) != (1, 1):
        raise tr.error("an adaptive average pool to other than 1 x 1 is not supported")
    x = to_nhwc(tr, call.args[0], call.loc)
    y = tr.builder.reduce("mean", x.ssa, [1, 2], call.loc)
    shape = shape_of(call.out)
    return value(tr, tr.builder.reshape(y, shape, f"{call.loc}.unflatten"), shape)


@rule("scaled_dot_product_attention")
def attention(tr: Translation, call: Call) -> Value:
    """Attention whole: q [B, H, Sq, D], k and v [B, Hkv, Sk, D]; a mask of [.., Sq, Sk] added."""
    q, k, v = (logical(tr, t, call.loc) for t in call.args[:3])
    mask = call.arg(3, "attn_mask")
    causal = bool(call.arg(5, "is_causal", False))
    if len(q.shape) != 4 or len(k.shape) != 4:
        raise tr.error("attention of other than [batch, heads, length, head dim] tensors is not supported")
    batch, heads, q_len, head_dim = q.shape
    operands = [q.ssa, fit(tr, k, k.shape, q.dtype, f"{call.loc}.k"), fit(tr, v, v.shape, q.dtype, f"{call.loc}.v")]
    if isinstance(mask, Value):
        operands.append(
            fit(tr, logical(tr, mask, call.loc), (batch, 1, q_len, k.shape[2]), q.dtype, f"{call.loc}.mask")
        )
    props = (
        f"batch = {batch} : i64, heads = {heads} : i64, kv_heads = {k.shape[1]} : i64, q_len = {q_len} : i64, "
        f"kv_len = {k.shape[2]} : i64, head_dim = {head_dim} : i64" + (", causal = true" if causal else "")
    )
    out = call.out[0] if isinstance(call.out, (list, tuple)) else call.out
    shape = shape_of(out)
    y = tr.builder.op("scaled_dot_product_attention", operands, shape, q.dtype, call.loc, props)
    return value(tr, y, shape)
