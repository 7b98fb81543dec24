"""Fast batched sampling from a Qwen2-architecture policy: a static KV cache, CUDA graphs on a GPU.

``transformers``' ``generate`` plans every decoding step in Python (a growing cache, logits
processors, stopping criteria), which leaves a GPU mostly idle at the batch sizes of GRPO rollouts.
:class:`StaticDecoder` runs the same model with a cache allocated once per batch shape and, on
CUDA, replays each decoding step as one captured CUDA graph. It reads the Hugging Face model's own
weights (in bf16 on a GPU, copied again before every batch, so it always samples from the policy
being trained), and it computes exactly what the model computes: the tests compare its logits and
greedy tokens with the model's own forward pass and ``generate``.

Left-padded prompts share one cache: row ``i`` has ``pad[i]`` empty slots before its prompt, its
token at slot ``s`` sits at position ``s - pad[i]``, and attention masks the empty slots. Rows that
have finished keep decoding padding until every row has (checked every few steps), so the batch
keeps one shape and one graph.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

# Cache shapes are rounded up to these, so that nearby batch shapes share a captured graph.
BATCH_ROUND, LENGTH_ROUND = 8, 256
CHECK_EVERY = 16  # decoding steps between checks for finished rows (each check syncs)
CANDIDATES = 256  # tokens nucleus sampling looks at first (see sample)


@dataclass(frozen=True)
class Sampling:
    """How a token is drawn: greedy at temperature 0; ``top_k`` 0 and ``top_p`` 1 switch those filters off."""

    temperature: float
    top_p: float = 1.0
    top_k: int = 0


def supports(model) -> bool:
    """Whether :class:`StaticDecoder` computes what ``model`` computes (else use ``model.generate``)."""
    config = model.config
    if config.model_type != "qwen2" or getattr(config, "use_sliding_window", False):
        return False
    if getattr(config, "hidden_act", "silu") != "silu":
        return False
    return _rope_theta(config) is not None


def _rope_theta(config) -> float | None:
    """The rotary base of plain (unscaled) RoPE, or None for any other kind."""
    params = getattr(config, "rope_parameters", None)  # transformers 5
    if params is None:
        scaling = getattr(config, "rope_scaling", None)  # transformers 4
        if scaling and scaling.get("rope_type", scaling.get("type", "default")) != "default":
            return None
        return float(config.rope_theta)
    if params.get("rope_type", "default") != "default":
        return None
    return float(params["rope_theta"])


def sample(logits: torch.Tensor, sampling: Sampling) -> torch.Tensor:
    """One token per row from ``logits`` (B × V); greedy at temperature 0."""
    if sampling.temperature <= 0:
        return logits.argmax(dim=-1)
    values, order = candidates(logits, sampling)
    drawn = torch.multinomial(torch.softmax(values, dim=-1), 1)
    return drawn.squeeze(-1) if order is None else order.gather(-1, drawn).squeeze(-1)


def candidates(logits: torch.Tensor, sampling: Sampling) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The scaled logits a token is drawn from (-inf where filtered out), and the token id of each
    column (None: column = token id). Temperature, then top-k, then top-p, as transformers orders them.

    Nucleus sampling looks at the ``CANDIDATES`` most likely tokens first and sorts the whole
    vocabulary only when some row's candidates hold less than ``top_p`` of its probability: the
    result is the same, without sorting 150,000 logits per row at every step.
    """
    logits = logits.float() / sampling.temperature
    vocab = logits.shape[-1]
    top_k = sampling.top_k if 0 < sampling.top_k < vocab else 0
    if sampling.top_p >= 1.0:
        return torch.topk(logits, top_k, dim=-1) if top_k else (logits, None)
    values, order = torch.topk(logits, top_k or min(CANDIDATES, vocab), dim=-1)  # most likely first
    if top_k:
        probs = torch.softmax(values, dim=-1)  # top-p among the top-k, renormalised
    else:
        probs = torch.exp(values - torch.logsumexp(logits, dim=-1, keepdim=True))
        if not bool((probs.sum(dim=-1) >= sampling.top_p).all()):
            values, order = torch.sort(logits, dim=-1, descending=True)
            probs = torch.softmax(values, dim=-1)
    # Keep the most likely tokens until their mass reaches top_p (the first one always).
    return values.masked_fill(probs.cumsum(dim=-1) - probs > sampling.top_p, float("-inf")), order


class _Layer:
    """One decoder layer's weights in the decoder's layout: q, k and v projections in one matrix, gate
    and up projections in another (one matrix product each instead of three and two)."""

    def __init__(self, layer, dtype: torch.dtype):
        attn, mlp = layer.self_attn, layer.mlp
        own = lambda *ps: torch.cat([p.detach() for p in ps]).to(dtype).clone()  # noqa: E731
        self.norm_in = own(layer.input_layernorm.weight)
        self.qkv_w = own(attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight)
        self.qkv_b = own(attn.q_proj.bias, attn.k_proj.bias, attn.v_proj.bias)
        self.o_w = own(attn.o_proj.weight)
        self.norm_post = own(layer.post_attention_layernorm.weight)
        self.gate_up_w = own(mlp.gate_proj.weight, mlp.up_proj.weight)
        self.down_w = own(mlp.down_proj.weight)

    def sources(self, layer):
        """(part of a tensor of this layer, the model's tensor it copies) pairs."""
        attn, mlp = layer.self_attn, layer.mlp
        pairs = [(self.norm_in, layer.input_layernorm.weight), (self.o_w, attn.o_proj.weight),
                 (self.norm_post, layer.post_attention_layernorm.weight), (self.down_w, mlp.down_proj.weight)]
        for fused, parts in ((self.qkv_w, (attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight)),
                             (self.qkv_b, (attn.q_proj.bias, attn.k_proj.bias, attn.v_proj.bias)),
                             (self.gate_up_w, (mlp.gate_proj.weight, mlp.up_proj.weight))):
            pairs += zip(fused.split([p.shape[0] for p in parts]), parts)
        return pairs


class StaticDecoder:
    """Batched decoding from a Hugging Face Qwen2 causal LM (see the module docstring).

    ``dtype`` is the precision of decoding: bf16 on CUDA by default, the model's own elsewhere;
    ``use_graphs`` (CUDA only, the default there) replays each decoding step as a CUDA graph.
    """

    def __init__(self, model, dtype: torch.dtype | None = None, use_graphs: bool | None = None,
                 round_batch: bool | None = None):
        if not supports(model):
            raise ValueError(f"StaticDecoder does not support {model.config.model_type!r} models of this configuration")
        self.model = model
        device = next(model.parameters()).device
        self.device = device
        self.dtype = dtype or (torch.bfloat16 if device.type == "cuda" else next(model.parameters()).dtype)
        self.use_graphs = device.type == "cuda" if use_graphs is None else use_graphs
        # Batches are padded to a multiple of BATCH_ROUND rows so that a few graphs serve all sizes.
        self.round_batch = self.use_graphs if round_batch is None else round_batch
        c = model.config
        self.n_heads, self.n_kv = c.num_attention_heads, c.num_key_value_heads
        self.head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
        self.eps = c.rms_norm_eps
        half = torch.arange(0, self.head_dim, 2, dtype=torch.int64, device=device).float() / self.head_dim
        self.inv_freq = 1.0 / (_rope_theta(c) ** half)
        self._build_weights()
        self._capacity: tuple[int, int] | None = None
        self._graphs: dict[tuple[int, int], _Step] = {}

    # -- weights ------------------------------------------------------------------------------

    def _build_weights(self) -> None:
        # The decoder's own copies (in its precision and layout), refreshed in place before each
        # batch so that the addresses a captured graph reads stay valid.
        body = self.model.get_decoder()
        own = lambda p: p.detach().to(self.dtype).clone()  # noqa: E731
        self.embed = own(body.embed_tokens.weight)
        self.layers = [_Layer(layer, self.dtype) for layer in body.layers]
        self.norm = own(body.norm.weight)
        head = self.model.get_output_embeddings().weight
        self.lm_head = self.embed if head is body.embed_tokens.weight else own(head)
        self._sources = [(self.embed, body.embed_tokens.weight), (self.norm, body.norm.weight)]
        self._sources += [pair for mine, layer in zip(self.layers, body.layers) for pair in mine.sources(layer)]
        if self.lm_head is not self.embed:
            self._sources.append((self.lm_head, head))

    @torch.no_grad()
    def sync_weights(self) -> None:
        """Copy the model's current weights into the decoder's."""
        for mine, source in self._sources:
            mine.copy_(source)

    # -- the model ----------------------------------------------------------------------------

    def _rms(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        # As Qwen2RMSNorm: normalise in float32, cast back, then scale.
        return weight * F.rms_norm(x.float(), x.shape[-1:], eps=self.eps).to(x.dtype)

    def _rotary(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and sin (B × T × head_dim) for integer ``positions`` (B × T), as Qwen2's rotary embedding."""
        freqs = positions.float().unsqueeze(-1) * self.inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(self.dtype), emb.sin().to(self.dtype)

    @staticmethod
    def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        half = x.shape[-1] // 2
        rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return x * cos + rotated * sin

    def _forward(self, tokens, positions, slots, mask, k_cache, v_cache, span: int) -> torch.Tensor:
        """Hidden states after the final norm for ``tokens`` (B × T) written at cache ``slots`` (T).

        ``mask`` (B × 1 × T × span, True = attend) covers the first ``span`` cache slots.
        """
        b, t = tokens.shape
        heads, kv, dim = self.n_heads, self.n_kv, self.head_dim
        groups = heads // kv
        cos, sin = self._rotary(positions)
        cos, sin = cos.unsqueeze(2), sin.unsqueeze(2)  # B × T × 1 × dim: one rotation for all heads
        x = F.embedding(tokens, self.embed)
        for i, w in enumerate(self.layers):
            h = self._rms(x, w.norm_in)
            qkv = F.linear(h, w.qkv_w, w.qkv_b).view(b, t, heads + 2 * kv, dim)
            qk = self._rotate(qkv[:, :, : heads + kv], cos, sin)  # queries and keys rotate alike
            q, k = qk[:, :, :heads].transpose(1, 2), qk[:, :, heads:].transpose(1, 2)
            v = qkv[:, :, heads + kv :].transpose(1, 2)
            k_cache[i].index_copy_(2, slots, k)
            v_cache[i].index_copy_(2, slots, v)
            keys, values = k_cache[i][:, :, :span], v_cache[i][:, :, :span]
            if t == 1:
                # Grouped-query attention without copying the cache: the query heads that share
                # a key/value head become that head's query rows (one position, one mask row).
                out = F.scaled_dot_product_attention(q.reshape(b, kv, groups, dim), keys, values, attn_mask=mask)
            else:
                keys, values = keys.repeat_interleave(groups, dim=1), values.repeat_interleave(groups, dim=1)
                out = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask)
            out = out.reshape(b, heads, t, dim).transpose(1, 2).reshape(b, t, -1)
            x = x + F.linear(out, w.o_w)
            gate, up = F.linear(self._rms(x, w.norm_post), w.gate_up_w).chunk(2, dim=-1)
            x = x + F.linear(F.silu(gate) * up, w.down_w)
        return self._rms(x, self.norm)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return F.linear(hidden, self.lm_head)

    # -- decoding -----------------------------------------------------------------------------

    def _reserve(self, batch: int, length: int) -> None:
        """A cache of at least ``batch`` rows and ``length`` slots (it only grows: graphs keep its address)."""
        if self._capacity and batch <= self._capacity[0] and length <= self._capacity[1]:
            return
        if self._capacity:
            batch, length = max(batch, self._capacity[0]), max(length, self._capacity[1])
        self._graphs.clear()
        self.k_cache = self.v_cache = None
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        shape = (len(self.layers), batch, self.n_kv, length, self.head_dim)
        self.k_cache = torch.zeros(shape, dtype=self.dtype, device=self.device)
        self.v_cache = torch.zeros(shape, dtype=self.dtype, device=self.device)
        self.slot_ids = torch.arange(length, device=self.device)
        self._capacity = (batch, length)

    def _decode(self, step: _Step) -> torch.Tensor:
        """Logits of ``step.tokens`` at slot ``step.slot``, attending to the first ``step.span`` slots."""
        b, span = step.tokens.shape[0], step.span
        positions = (step.slot - step.pad).unsqueeze(1)
        slots = self.slot_ids[:span]
        visible = (slots <= step.slot) & (slots >= step.pad.unsqueeze(1))
        hidden = self._forward(step.tokens, positions, step.slot, visible[:, None, None, :],
                               self.k_cache[:, :b], self.v_cache[:, :b], span)
        return self.logits(hidden[:, -1]).float()

    def _step_for(self, batch: int, span: int) -> _Step:
        """The static inputs of one decoding-step shape (and, once run on CUDA, its captured graph)."""
        key = (batch, span)
        if key not in self._graphs:
            self._graphs[key] = _Step(
                tokens=torch.zeros((batch, 1), dtype=torch.long, device=self.device),
                slot=torch.zeros((1,), dtype=torch.long, device=self.device),
                pad=torch.zeros((batch,), dtype=torch.long, device=self.device),
                span=span,
            )
        return self._graphs[key]

    def _run(self, step: _Step) -> torch.Tensor:
        """Run a step whose inputs are set: eagerly, or by replaying its graph (captured on first use)."""
        if not self.use_graphs:
            return self._decode(step)
        if step.graph is None:
            # Warm up on a side stream, then capture, as CUDA graphs require. Warming up runs the
            # step for real on its current inputs: it writes the same keys and values again.
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                for _ in range(2):
                    self._decode(step)
            torch.cuda.current_stream().wait_stream(stream)
            step.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(step.graph):
                step.logits = self._decode(step)
        step.graph.replay()
        return step.logits

    @torch.no_grad()
    def generate(self, prompts: list[list[int]], *, max_new_tokens: int, sampling: Sampling,
                 stop_ids: set[int], pad_id: int) -> list[list[int]]:
        """The sampled continuation of each prompt, up to and including its first stop token."""
        if not prompts:
            return []
        self.sync_weights()
        n, width = len(prompts), max(len(p) for p in prompts)
        batch = self._batch_size(n)
        self._reserve(batch, _round(width + max_new_tokens))

        # Prefill: every prompt, right-aligned at slot width - 1; extra rows repeat the last prompt.
        rows = prompts + [prompts[-1]] * (batch - n)
        pad = torch.tensor([width - len(p) for p in rows], device=self.device)
        ids = torch.full((batch, width), pad_id, dtype=torch.long)
        for i, p in enumerate(rows):
            ids[i, width - len(p):] = torch.tensor(p, dtype=torch.long)
        ids = ids.to(self.device)
        slots = self.slot_ids[:width]
        valid = slots >= pad.unsqueeze(1)  # B × width
        causal = slots.unsqueeze(0) <= slots.unsqueeze(1)  # query × key
        # Padding rows attend to themselves only: a row with nothing to attend to would give NaN.
        mask = (causal & valid[:, None, :]) | torch.eye(width, dtype=torch.bool, device=self.device)
        positions = (slots - pad.unsqueeze(1)).clamp(min=0)
        hidden = self._forward(ids, positions, slots, mask.unsqueeze(1), self.k_cache[:, :batch],
                               self.v_cache[:, :batch], width)
        tokens = sample(self.logits(hidden[:, -1]).float(), sampling)

        stops = torch.tensor(sorted(stop_ids), device=self.device)
        out = torch.full((batch, max_new_tokens), pad_id, dtype=torch.long, device=self.device)
        done = torch.zeros(batch, dtype=torch.bool, device=self.device)
        owner = list(range(n)) + [None] * (batch - n)  # which prompt each row of the batch decodes
        finished: dict[int, list[int]] = {}
        for k in range(max_new_tokens):
            out[:, k] = torch.where(done, pad_id, tokens)
            done |= torch.isin(tokens, stops)
            if k + 1 == max_new_tokens:
                break
            if (k + 1) % CHECK_EVERY == 0:
                # Rows that have finished leave the batch once a smaller batch (and graph) fits the
                # rest: the cache rows of those still decoding move to the front.
                live = [i for i, flag in enumerate(done.tolist()) if not flag and owner[i] is not None]
                if not live:
                    break
                smaller = self._batch_size(len(live))
                if smaller < len(owner):
                    keep = live + [live[-1]] * (smaller - len(live))
                    for i, flag in enumerate(done.tolist()):
                        if owner[i] is not None and i not in live:
                            finished[owner[i]] = out[i, : k + 1].tolist()
                    index = torch.tensor(keep, device=self.device)
                    for cache in (self.k_cache, self.v_cache):
                        cache[:, :smaller] = cache[:, index]
                    out, done, pad, tokens = out[index], done[index], pad[index], tokens[index]
                    owner = [owner[i] for i in live] + [None] * (smaller - len(live))
            # The token just drawn goes to slot width + k; attend to the slots up to it, in
            # LENGTH_ROUND buckets (one graph per bucket), not to the whole cache.
            step = self._step_for(len(owner), min(_round(width + k + 1), self._capacity[1]))
            step.tokens.copy_(tokens.unsqueeze(1))
            step.slot.fill_(width + k)
            step.pad.copy_(pad)
            tokens = sample(self._run(step), sampling)

        for i, row in enumerate(out.tolist()):
            if owner[i] is not None:
                finished[owner[i]] = row
        result = []
        for i in range(n):
            row = finished[i]
            end = next((j for j, tok in enumerate(row) if tok in stop_ids), None)
            result.append(row[: end + 1] if end is not None else row)
        return result

    def _batch_size(self, n: int) -> int:
        return -(-n // BATCH_ROUND) * BATCH_ROUND if self.round_batch else n


def _round(length: int) -> int:
    return -(-length // LENGTH_ROUND) * LENGTH_ROUND


@dataclass
class _Step:
    """Static inputs (and, on CUDA, the captured graph and its output) of one decoding-step shape."""

    tokens: torch.Tensor
    slot: torch.Tensor
    pad: torch.Tensor
    span: int
    graph: object = None
    logits: torch.Tensor | None = None
