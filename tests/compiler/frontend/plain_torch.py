"""Layers of the three model families users bring, written in plain torch (no transformers or
torchvision): a BERT encoder layer, a Llama decoder layer (RMSNorm, rotary embedding, attention
with grouped KV heads, SwiGLU) and a ResNet bottleneck block. Imported only where torch is."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class BertSelfAttention(nn.Module):
    def __init__(self, hidden: int, heads: int) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)

    def split(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, _ = x.shape
        return x.view(batch, seq, self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim) + mask
        context = torch.softmax(scores, dim=-1) @ v
        batch, _, seq, _ = context.shape
        return context.permute(0, 2, 1, 3).reshape(batch, seq, self.heads * self.head_dim)


class BertLayer(nn.Module):
    """One encoder layer of BERT as Hugging Face's BertLayer computes it (post-norm, GELU)."""

    def __init__(self, hidden: int = 768, heads: int = 12, intermediate: int = 3072) -> None:
        super().__init__()
        self.attention = BertSelfAttention(hidden, heads)
        self.attention_output = nn.Linear(hidden, hidden)
        self.attention_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.intermediate = nn.Linear(hidden, intermediate)
        self.output = nn.Linear(intermediate, hidden)
        self.output_norm = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = self.attention_norm(x + self.attention_output(self.attention(x, mask)))
        return self.output_norm(x + self.output(F.gelu(self.intermediate(x))))


def bert_inputs(batch: int = 8, seq: int = 128, hidden: int = 768) -> tuple[torch.Tensor, torch.Tensor]:
    """Hidden states and the additive attention mask over the keys, [batch, 1, 1, seq]."""
    return torch.randn(batch, seq, hidden), torch.zeros(batch, 1, 1, seq)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaAttention(nn.Module):
    def __init__(self, hidden: int, heads: int, kv_heads: int) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.q_proj = nn.Linear(hidden, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, hidden, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        batch, seq, _ = x.shape
        q = self.q_proj(x).view(batch, seq, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(batch, seq, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(batch, seq, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return self.o_proj(out.transpose(1, 2).reshape(batch, seq, self.heads * self.head_dim))


class LlamaDecoderLayer(nn.Module):
    """One decoder layer of Llama 3 (pre-norm, RMSNorm, rotary positions, GQA, SwiGLU)."""

    def __init__(self, hidden: int = 2048, heads: int = 32, kv_heads: int = 8, intermediate: int = 8192) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(hidden)
        self.self_attn = LlamaAttention(hidden, heads, kv_heads)
        self.post_attention_layernorm = RMSNorm(hidden)
        self.gate_proj = nn.Linear(hidden, intermediate, bias=False)
        self.up_proj = nn.Linear(hidden, intermediate, bias=False)
        self.down_proj = nn.Linear(intermediate, hidden, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


def llama_inputs(batch: int = 1, seq: int = 128, hidden: int = 2048, head_dim: int = 64) -> tuple:
    """Hidden states and the rotary tables for `seq` positions, [1, 1, seq, head_dim]."""
    inv_freq = 1.0 / (500000.0 ** (torch.arange(0, head_dim, 2).float() / head_dim))
    angles = torch.outer(torch.arange(seq).float(), inv_freq)
    table = torch.cat((angles, angles), dim=-1)[None, None]
    return torch.randn(batch, seq, hidden), table.cos(), table.sin()


class Bottleneck(nn.Module):
    """ResNet-50's bottleneck block: 1x1, 3x3 (strided), 1x1 convolutions with batch norms, and a
    projected shortcut."""

    def __init__(self, channels: int = 256, width: int = 128, out: int = 512, stride: int = 2) -> None:
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(channels, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, out, 1, bias=False), nn.BatchNorm2d(out)
        self.downsample = nn.Sequential(nn.Conv2d(channels, out, 1, stride=stride, bias=False), nn.BatchNorm2d(out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        return F.relu(self.bn3(self.conv3(y)) + self.downsample(x))


def bottleneck_inputs(batch: int = 8, channels: int = 256, size: int = 56) -> tuple[torch.Tensor]:
    return (torch.randn(batch, channels, size, size),)
