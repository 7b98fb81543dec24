"""Fast batched sampling from a Qwen2-architecture policy: a static KV cache, CUDA graphs on a GPU.

``transformers``' ``generate`` plans every decoding step in Python (a growing cache, logits
processors, stopping criteria), which leaves a GPU mostly idle at the batch sizes of GRPO rollouts.
:class:`StaticDecoder` runs the same model with a cache allocated once per batch shape and, on
CUDA, replays each decoding step as one captured CUDA graph. It reads the Hugging Face model's own
weights (in bf16 on a GPU, copied again before every batch, so it always samples from the policy
being trained), and it computes exactly what the model computes: the tests compare its logits and
greedy tokens with the model's own forward pass and ``generate``.

Continuous batching: a fixed number of rows decode together, one token each per step, and each row
holds one sequence at its own length: its prompt fills cache slots 0 … len − 1 (the slot is the
position) and every drawn token goes to the next slot. When a row's sequence ends (checked every
few steps), the next waiting prompt is prefilled into that row at once, so the batch stays full
until the queue is empty; a caller can queue a follow-up prompt as a sequence ends (the agent's
rewrite after its own draft). Once nothing waits, the rows still decoding move to a smaller batch.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Callable

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


def sample(logits: torch.Tensor, sampling: Sampling, seeds: torch.Tensor | None = None,
           counters: torch.Tensor | None = None) -> torch.Tensor:
    """One token per row from ``logits`` (B × V); greedy at temperature 0.

    With ``seeds`` (one per row) and ``counters`` (the row's token index), the draw is the Gumbel-max
    of the filtered logits under noise that depends on those two alone, so a row draws the same
    token whatever rows sit beside it; without, it comes from the global generator.
    """
    if sampling.temperature <= 0:
        return logits.argmax(dim=-1)
    values, order = candidates(logits, sampling)
    if seeds is None:
        drawn = torch.multinomial(torch.softmax(values, dim=-1), 1).squeeze(-1)
        return drawn if order is None else order.gather(-1, drawn.unsqueeze(-1)).squeeze(-1)
    return draw(values, order, seeds, counters)


def draw(values: torch.Tensor, order: torch.Tensor | None, seeds: torch.Tensor, counters: torch.Tensor) -> torch.Tensor:
    """The seeded Gumbel-max draw from filtered logits (see :func:`candidates`): token ids, one per row."""
    drawn = (values + gumbel(seeds, counters, values.shape[-1])).argmax(dim=-1, keepdim=True)
    return drawn.squeeze(-1) if order is None else order.gather(-1, drawn).squeeze(-1)


def candidates(logits: torch.Tensor, sampling: Sampling) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The scaled logits a token is drawn from (-inf where filtered out), and the token id of each
    column (None: column = token id). Temperature, then top-k, then top-p, as transformers orders them.

    Nucleus sampling looks at the ``CANDIDATES`` most likely tokens first and sorts the whole
    vocabulary only when some row's candidates hold less than ``top_p`` of its probability: the
    result is the same, without sorting 150,000 logits per row at every step.
    """
    values, order, covered = first_candidates(logits, sampling)
    if covered is not None and not bool(covered.all()):
        scaled = logits.float() / sampling.temperature
        values, order = torch.sort(scaled, dim=-1, descending=True)
        values = _nucleus(values, torch.softmax(values, dim=-1), sampling.top_p)
    return values, order


def first_candidates(logits: torch.Tensor, sampling: Sampling) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """:func:`candidates` from the ``CANDIDATES`` most likely tokens alone, without a sync (so that a
    CUDA graph can hold it), and per row whether those held ``top_p`` of its probability (None: no
    nucleus filter needs more than them). Rows where they did not need :func:`candidates` itself."""
    logits = logits.float() / sampling.temperature
    vocab = logits.shape[-1]
    top_k = sampling.top_k if 0 < sampling.top_k < vocab else 0
    if sampling.top_p >= 1.0:
        values, order = torch.topk(logits, top_k, dim=-1) if top_k else (logits, None)
        return values, order, None
    values, order = torch.topk(logits, top_k or min(CANDIDATES, vocab), dim=-1)  # most likely first
    if top_k:
        return _nucleus(values, torch.softmax(values, dim=-1), sampling.top_p), order, None  # top-p among the top-k
    probs = torch.exp(values - torch.logsumexp(logits, dim=-1, keepdim=True))
    return _nucleus(values, probs, sampling.top_p), order, probs.sum(dim=-1) >= sampling.top_p


def _nucleus(values: torch.Tensor, probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """Keep the most likely tokens (sorted first) until their mass reaches ``top_p`` (the first one always)."""
    return values.masked_fill(probs.cumsum(dim=-1) - probs > top_p, float("-inf"))


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
        # Qwen2RMSNorm in one kernel: it normalises in float32 too, and rounds once where
        # transformers rounds twice (after normalising, after scaling); the same in float32.
        return F.rms_norm(x, x.shape[-1:], weight, eps=self.eps)

    def _rotary(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and signed sin (B × T × head_dim) for integer ``positions`` (B × T), as Qwen2's rotary
        embedding: ``x·cos + rotate_half(x)·sin`` is ``x·cos + roll(x)·signed`` (see :meth:`_rotate`)."""
        freqs = positions.float().unsqueeze(-1) * self.inv_freq
        cos, sin = freqs.cos(), freqs.sin()
        return torch.cat((cos, cos), dim=-1).to(self.dtype), torch.cat((-sin, sin), dim=-1).to(self.dtype)

    @staticmethod
    def _rotate(x: torch.Tensor, cos: torch.Tensor, signed_sin: torch.Tensor) -> torch.Tensor:
        # rotate_half(x) = (-x2, x1) = roll(x, half) · (-1, 1): three kernels instead of five
        return torch.addcmul(x * cos, x.roll(x.shape[-1] // 2, dims=-1), signed_sin)

    def _forward(self, tokens: torch.Tensor, positions: torch.Tensor, attend) -> torch.Tensor:
        """Hidden states after the final norm for ``tokens`` (B × T) at ``positions`` (B × T).

        ``attend(layer, q, k, v)`` stores the layer's keys and values in the cache and returns the
        attention output (q: B × heads × T × dim; k, v: B × kv_heads × T × dim).
        """
        b, t = tokens.shape
        heads, kv, dim = self.n_heads, self.n_kv, self.head_dim
        cos, sin = self._rotary(positions)
        cos, sin = cos.unsqueeze(2), sin.unsqueeze(2)  # B × T × 1 × dim: one rotation for all heads
        x = F.embedding(tokens, self.embed)
        for i, w in enumerate(self.layers):
            h = self._rms(x, w.norm_in)
            qkv = F.linear(h, w.qkv_w, w.qkv_b).view(b, t, heads + 2 * kv, dim)
            qk = self._rotate(qkv[:, :, : heads + kv], cos, sin)  # queries and keys rotate alike
            q, k = qk[:, :, :heads].transpose(1, 2), qk[:, :, heads:].transpose(1, 2)
            v = qkv[:, :, heads + kv :].transpose(1, 2)
            out = attend(i, q, k, v).transpose(1, 2).reshape(b, t, -1)
            x = x + F.linear(out, w.o_w)
            gate, up = F.linear(self._rms(x, w.norm_post), w.gate_up_w).chunk(2, dim=-1)
            x = x + F.linear(F.silu(gate) * up, w.down_w)
        return self._rms(x, self.norm)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return F.linear(hidden, self.lm_head)

    def _prefill(self, rows: torch.Tensor, prompts: list[list[int]], pad_id: int) -> torch.Tensor:
        """Run ``prompts`` into cache ``rows`` (slots 0 … len − 1); the logits after each prompt's last token.

        The prompts are right-padded to one width: the padding comes after every real token, so
        causal attention never lets a real token see it, and the slots it fills are masked out (and
        overwritten) once the row decodes.
        """
        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
        for i, p in enumerate(prompts):
            ids[i, : len(p)] = torch.tensor(p, dtype=torch.long)
        groups = self.n_heads // self.n_kv

        def attend(i, q, k, v):
            self.k_cache[i][rows, :, :width] = k
            self.v_cache[i][rows, :, :width] = v
            keys, values = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
            return F.scaled_dot_product_attention(q, keys, values, is_causal=True)

        positions = torch.arange(width, device=self.device).expand(len(prompts), width)
        hidden = self._forward(ids.to(self.device), positions, attend)
        last = torch.tensor([len(p) - 1 for p in prompts], device=self.device)
        return self.logits(hidden[torch.arange(len(prompts), device=self.device), last]).float()

    def _decode(self, step: _Step) -> torch.Tensor:
        """Logits after one token per row: row ``r``'s ``step.tokens[r]`` goes to its slot ``step.pos[r]``
        and attends to its slots up to that one, within the first ``step.span``."""
        b, span = step.tokens.shape[0], step.span
        kv, groups, dim = self.n_kv, self.n_heads // self.n_kv, self.head_dim
        rows = self.row_ids[:b]
        # Each row attends to its slots up to its own: an additive mask, made once for all layers.
        visible = self.slot_ids[:span] <= step.pos.unsqueeze(1)  # B × span
        bias = torch.zeros(visible.shape, dtype=self.dtype, device=self.device).masked_fill_(~visible, float("-inf"))

        def attend(i, q, k, v):
            self.k_cache[i][rows, :, step.pos] = k[:, :, 0]
            self.v_cache[i][rows, :, step.pos] = v[:, :, 0]
            # Grouped-query attention without copying the cache: the query heads that share a
            # key/value head become that head's query rows (one position, one mask row).
            out = F.scaled_dot_product_attention(q.reshape(b, kv, groups, dim), self.k_cache[i][:b, :, :span],
                                                 self.v_cache[i][:b, :, :span], attn_mask=bias[:, None, None, :])
            return out.reshape(b, groups * kv, 1, dim)

        hidden = self._forward(step.tokens, step.pos.unsqueeze(1), attend)
        return self.logits(hidden[:, -1]).float()

    # -- the cache ----------------------------------------------------------------------------

    def _reserve(self, batch: int, length: int) -> None:
        """A cache of at least ``batch`` rows and ``length`` slots, keeping what it holds when it grows
        (a new address: captured graphs are dropped)."""
        if self._capacity and batch <= self._capacity[0] and length <= self._capacity[1]:
            return
        old = (self.k_cache, self.v_cache) if self._capacity else None
        if self._capacity:
            batch, length = max(batch, self._capacity[0]), max(length, self._capacity[1])
        self._graphs.clear()
        shape = (len(self.layers), batch, self.n_kv, length, self.head_dim)
        self.k_cache = torch.zeros(shape, dtype=self.dtype, device=self.device)
        self.v_cache = torch.zeros(shape, dtype=self.dtype, device=self.device)
        if old is not None:
            b, n = old[0].shape[1], old[0].shape[3]
            self.k_cache[:, :b, :, :n] = old[0]
            self.v_cache[:, :b, :, :n] = old[1]
            del old
            if self.device.type == "cuda":
                torch.cuda.empty_cache()
        self.slot_ids = torch.arange(length, device=self.device)
        self.row_ids = torch.arange(batch, device=self.device)
        self._capacity = (batch, length)

    def max_rows(self, length: int, cap: int) -> int:
        """How many sequences of up to ``length`` tokens to decode at once: ``cap``, or fewer where the
        GPU's free memory would not hold their cache and per-step logits with room to spare."""
        if self.device.type != "cuda":
            return cap
        free, _ = torch.cuda.mem_get_info(self.device)
        size = torch.finfo(self.dtype).bits // 8
        cache = 2 * len(self.layers) * self.n_kv * self.head_dim * _round(length) * size
        logits = 4 * self.lm_head.shape[0] * 4  # the step's float32 logits and what sampling makes of them
        return max(1, min(cap, int(0.5 * free // (cache + logits))))

    # -- one decoding step ---------------------------------------------------------------------

    def _step_for(self, batch: int, span: int, sampling: Sampling) -> _Step:
        """The static inputs of one decoding-step shape (and, once run on CUDA, its captured graph)."""
        key = (batch, span, sampling)
        if key not in self._graphs:
            zeros = lambda *shape: torch.zeros(shape, dtype=torch.long, device=self.device)  # noqa: E731
            self._graphs[key] = _Step(tokens=zeros(batch, 1), pos=zeros(batch), seeds=zeros(batch),
                                      counters=zeros(batch), span=span, sampling=sampling)
        return self._graphs[key]

    def _decode_and_draw(self, step: _Step) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """The step's logits, each row's next token drawn from its first candidates, and per row whether
        those sufficed (None: they always do; see :func:`first_candidates`)."""
        logits = self._decode(step)
        if step.sampling.temperature <= 0:
            return logits, logits.argmax(dim=-1), None
        values, order, covered = first_candidates(logits, step.sampling)
        return logits, draw(values, order, step.seeds, step.counters), covered

    def _run(self, step: _Step) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Run a step whose inputs are set: eagerly, or by replaying its graph (captured on first use)."""
        if not self.use_graphs:
            return self._decode_and_draw(step)
        if step.graph is None:
            # Warm up on a side stream, then capture, as CUDA graphs require. Warming up runs the
            # step for real on its current inputs: it writes the same keys and values again.
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                for _ in range(2):
                    self._decode_and_draw(step)
            torch.cuda.current_stream().wait_stream(stream)
            step.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(step.graph):
                step.outputs = self._decode_and_draw(step)
        step.graph.replay()
        return step.outputs

    # -- decoding -----------------------------------------------------------------------------

    @torch.no_grad()
    def generate(self, prompts: list[list[int]], *, max_new_tokens: int, sampling: Sampling, stop_ids: set[int],
                 pad_id: int, then: Callable[[int, list[int]], list[int] | None] | None = None,
                 max_rows: int | None = None) -> list[list[int]]:
        """The sampled continuation of each prompt, up to and including its first stop token.

        Up to ``max_rows`` sequences (default: all the prompts) decode at once, and a row whose
        sequence ends takes the next waiting one at once (continuous batching). ``then(i, tokens)``,
        called as sequence ``i`` ends, may return a further prompt: it joins the queue as sequence
        ``len(prompts) + k`` (the k-th such prompt), and the result lists every sequence in that
        order. Sampling is seeded per sequence (from the global generator, once per call): a
        sequence draws the same tokens whatever else decodes beside it.
        """
        if not prompts:
            return []
        self.sync_weights()
        rows = self._batch_size(min(max_rows or len(prompts), len(prompts)))
        self._reserve(rows, _round(max(len(p) for p in prompts) + max_new_tokens))
        seeds = torch.randint(0, 2**32, (len(prompts),)).tolist() if sampling.temperature > 0 else [0] * len(prompts)
        batch = _Batch(self, rows, max_new_tokens, pad_id)
        stops = torch.tensor(sorted(stop_ids) or [-1], device=self.device)
        queue = deque(zip(range(len(prompts)), prompts, seeds))
        results: dict[int, list[int]] = {}
        next_id = len(prompts)
        while queue or batch.live():
            free = batch.free()
            if queue and free:
                admitted = [queue.popleft() for _ in range(min(len(free), len(queue)))]
                need = _round(max(len(p) for _, p, _ in admitted) + max_new_tokens)
                if need > self._capacity[1]:
                    self._reserve(rows, need)
                batch.admit(free[: len(admitted)], admitted, sampling, stops)
            for _ in range(CHECK_EVERY):
                batch.step(sampling, stops)
            for seq, seed, tokens in batch.retire():
                end = next((j for j, tok in enumerate(tokens) if tok in stop_ids), None)
                results[seq] = tokens[: end + 1] if end is not None else tokens
                follow = then(seq, results[seq]) if then is not None else None
                if follow is not None:  # a seed of its own, derived from the one before it
                    queue.append((next_id, follow, _mix32(seed ^ 0x9E3779B9)))
                    next_id += 1
            if not queue:
                batch.shrink()
        return [results[i] for i in range(len(results))]

    def _batch_size(self, n: int) -> int:
        return -(-n // BATCH_ROUND) * BATCH_ROUND if self.round_batch else n


def _round(length: int) -> int:
    return -(-length // LENGTH_ROUND) * LENGTH_ROUND


@dataclass
class _Step:
    """Static inputs (and, on CUDA, the captured graph and its outputs) of one decoding-step shape:
    each row's token, its slot, its sampling seed and how many tokens it has drawn."""

    tokens: torch.Tensor
    pos: torch.Tensor
    seeds: torch.Tensor
    counters: torch.Tensor
    span: int
    sampling: Sampling
    graph: object = None
    outputs: tuple | None = None


class _Batch:
    """The rows decoding at once: the sequence each holds (None: free) and their state on the device.

    Per row: the token to feed next and its cache slot, how many tokens it has drawn (``out``
    holds them), whether it has ended, and its sampling seed. Rows are checked for ended sequences
    every ``CHECK_EVERY`` steps (each check syncs); an ended row decodes padding in place until then.
    """

    def __init__(self, decoder: StaticDecoder, rows: int, max_new: int, pad_id: int):
        self.decoder, self.max_new, self.pad_id = decoder, max_new, pad_id
        zeros = lambda dtype: torch.zeros(rows, dtype=dtype, device=decoder.device)  # noqa: E731
        self.tokens, self.pos, self.count, self.seed = (zeros(torch.long) for _ in range(4))
        self.done = torch.ones(rows, dtype=torch.bool, device=decoder.device)
        self.out = torch.full((rows, max_new), pad_id, dtype=torch.long, device=decoder.device)
        self.owner: list[tuple[int, int] | None] = [None] * rows  # (sequence, seed)
        self.reach = [0] * rows  # an upper bound of each row's slots in use, for the attention span

    def live(self) -> bool:
        return any(o is not None for o in self.owner)

    def free(self) -> list[int]:
        return [r for r, o in enumerate(self.owner) if o is None]

    def admit(self, rows: list[int], sequences: list[tuple[int, list[int], int]], sampling: Sampling,
              stops: torch.Tensor) -> None:
        """Prefill ``sequences`` (id, prompt, seed) into free ``rows`` and draw their first tokens."""
        device = self.decoder.device
        index = torch.tensor(rows, device=device)
        prompts = [p for _, p, _ in sequences]
        seeds = torch.tensor([s for _, _, s in sequences], device=device)
        logits = self.decoder._prefill(index, prompts, self.pad_id)
        first = sample(logits, sampling, seeds, torch.zeros_like(seeds))
        self.seed[index] = seeds
        self.out[index] = self.pad_id
        self.out[index, 0] = first
        self.count[index] = 1
        self.tokens[index] = first
        self.pos[index] = torch.tensor([len(p) for p in prompts], device=device)
        self.done[index] = torch.isin(first, stops) | (self.max_new <= 1)
        for row, (seq, prompt, seed) in zip(rows, sequences):
            self.owner[row] = (seq, seed)
            self.reach[row] = len(prompt) + 1

    def step(self, sampling: Sampling, stops: torch.Tensor) -> None:
        """Every row feeds its token and draws the next; rows that have ended stay as they are."""
        decoder = self.decoder
        span = min(_round(max(self.reach)), decoder._capacity[1])
        step = decoder._step_for(len(self.owner), span, sampling)
        step.tokens.copy_(self.tokens.unsqueeze(1))
        step.pos.copy_(self.pos)
        step.seeds.copy_(self.seed)
        step.counters.copy_(self.count)
        logits, drawn, covered = decoder._run(step)
        if covered is not None and not bool(covered.all()):
            drawn = sample(logits, sampling, self.seed, self.count)  # some row's nucleus is wider: sort
        going = ~self.done
        rows = decoder.row_ids[: len(self.owner)]
        at = self.count.clamp(max=self.max_new - 1)
        self.out[rows, at] = torch.where(going, drawn, self.out[rows, at])
        self.count += going
        self.tokens = torch.where(going, drawn, self.tokens)
        self.pos += going
        self.done |= going & torch.isin(drawn, stops) | (self.count >= self.max_new)
        self.reach = [r + 1 if o is not None else r for r, o in zip(self.reach, self.owner)]

    def retire(self) -> list[tuple[int, int, list[int]]]:
        """Free the rows whose sequences have ended: (sequence, seed, tokens drawn) of each."""
        done = self.done.tolist()
        ended = [r for r, o in enumerate(self.owner) if o is not None and done[r]]
        if not ended:
            return []
        index = torch.tensor(ended, device=self.decoder.device)
        counts, outs = self.count[index].tolist(), self.out[index].tolist()
        finished = []
        for row, count, out in zip(ended, counts, outs):
            seq, seed = self.owner[row]
            finished.append((seq, seed, out[:count]))
            self.owner[row], self.reach[row] = None, 0
        return finished

    def shrink(self) -> None:
        """Once nothing waits, move the rows still decoding to the front of a smaller batch (and graph)."""
        live = [r for r, o in enumerate(self.owner) if o is not None]
        if not live:
            return
        smaller = self.decoder._batch_size(len(live))
        if smaller >= len(self.owner):
            return
        index = torch.tensor(live + [live[-1]] * (smaller - len(live)), device=self.decoder.device)
        for cache in (self.decoder.k_cache, self.decoder.v_cache):
            cache[:, :smaller] = cache[:, index]
        self.tokens, self.pos, self.count, self.seed = (t[index] for t in (self.tokens, self.pos, self.count, self.seed))
        self.out, self.done = self.out[index], self.done[index]
        self.done[len(live):] = True  # the filler rows repeat a live one: they hold no sequence
        self.owner = [self.owner[r] for r in live] + [None] * (smaller - len(live))
        self.reach = [self.reach[r] for r in live] + [0] * (smaller - len(live))


def _mix32(x):
    """A 32-bit integer hash (lowbias32) of ``x`` (an int, or an int64 tensor of values below 2**32)."""
    x = x ^ (x >> 16)
    x = (x * 0x7FEB352D) & 0xFFFFFFFF  # a wrapped int64 product keeps its low 32 bits right
    x = x ^ (x >> 15)
    x = (x * 0x846CA68B) & 0xFFFFFFFF
    return x ^ (x >> 16)


def gumbel(seeds: torch.Tensor, counters: torch.Tensor, columns: int) -> torch.Tensor:
    """Gumbel noise (B × ``columns``) that depends only on each row's seed and counter (its token index)."""
    key = _mix32(seeds ^ _mix32(counters + 1))
    bits = _mix32(key.unsqueeze(1) ^ _mix32(torch.arange(columns, device=seeds.device) + 0x632BE5AB).unsqueeze(0))
    uniform = ((bits >> 8).float() + 0.5) / 2**24  # 24 random bits, never 0 or 1
    return -torch.log(-torch.log(uniform))
