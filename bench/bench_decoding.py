"""The local backend's engine on one GPU: rollout decoding and the GRPO update, against plain transformers.

    python bench/bench_decoding.py [--model DIR] [--batch 32 64 128] [--prompt-tokens 800] [--new-tokens 768]

Without ``--model`` it builds a randomly initialised model of Qwen2.5-0.5B's shape (speed does not
depend on the weights; rows are forced to the full length). Prints:

- step: milliseconds of one decoding step's model part (a graph replay) and of its sampling;
- decoding: generated tokens/s of :class:`~audiobook_rl.agent.decoding.StaticDecoder` (bf16, CUDA graphs)
  and of ``model.generate`` (bf16, the same sampling), per batch size;
- exactness: in float32, the share of greedy tokens where the decoder (CUDA graphs included) and
  ``model.generate`` agree, over a few prompts;
- update: seconds and tokens/s of one GRPO update (2 mini-batches) on ``--rows`` rows of prompt +
  response, its peak memory, and a profile: its phases and heaviest kernels.
"""

from __future__ import annotations

import argparse
import random
import time

import torch

from audiobook_rl.agent.decoding import Sampling, StaticDecoder, _Batch, _round
from audiobook_rl.training.local_grpo import Row, ppo_update

SAMPLING = Sampling(temperature=0.7, top_p=0.95)


def qwen_05b_shape(seed: int):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
        num_key_value_heads=2, max_position_embeddings=32768, rope_theta=1000000.0, tie_word_embeddings=True,
        rms_norm_eps=1e-6,
    )
    torch.manual_seed(seed)
    return Qwen2ForCausalLM(config)


def timed(fn) -> tuple[object, float]:
    torch.cuda.synchronize()
    started = time.perf_counter()
    out = fn()
    torch.cuda.synchronize()
    return out, time.perf_counter() - started


def decoder_rate(model, batch: int, prompt_tokens: int, new_tokens: int, vocab: int) -> tuple[float, float]:
    """Generated tokens/s of the static decoder with ``batch`` full-length rows in flight (prompts of
    ``prompt_tokens`` − up to 200 tokens), and the seconds of the first call (graph capture)."""
    rng = random.Random(batch)
    prompts = [[rng.randrange(1000, vocab) for _ in range(prompt_tokens - rng.randrange(0, 200))] for _ in range(batch)]
    decoder = StaticDecoder(model)
    run = lambda: decoder.generate(prompts, max_new_tokens=new_tokens, sampling=SAMPLING, stop_ids=set(), pad_id=0)  # noqa: E731
    _, first = timed(run)  # captures the graphs
    out, seconds = timed(run)
    decoder = None  # frees the cache before the next size
    torch.cuda.empty_cache()
    return sum(len(r) for r in out) / seconds, first


def decode_speed(model, batch: int, prompt_tokens: int, new_tokens: int, vocab: int, transformers: bool = True) -> None:
    rate, first = decoder_rate(model, batch, prompt_tokens, new_tokens, vocab)
    print(f"decoder   batch {batch:3d}: {rate:8.0f} tok/s ({batch * new_tokens} tokens; first call {first:.2f} s)", flush=True)
    if not transformers:
        return

    rng = random.Random(batch)
    prompts = [[rng.randrange(1000, vocab) for _ in range(prompt_tokens - rng.randrange(0, 200))] for _ in range(batch)]
    hf_new = min(new_tokens, 128)  # transformers is slow: a shorter run gives its rate
    bf16 = model.to(torch.bfloat16)
    width = max(len(p) for p in prompts)
    ids = torch.zeros((batch, width), dtype=torch.long)
    attention = torch.zeros_like(ids)
    for i, p in enumerate(prompts):
        ids[i, width - len(p):] = torch.tensor(p)
        attention[i, width - len(p):] = 1
    gen = lambda: bf16.generate(input_ids=ids.cuda(), attention_mask=attention.cuda(), max_new_tokens=hf_new,  # noqa: E731
                                min_new_tokens=hf_new, do_sample=True, temperature=SAMPLING.temperature,
                                top_p=SAMPLING.top_p, top_k=0, pad_token_id=0)
    timed(gen)
    _, seconds = timed(gen)
    print(f"transformers batch {batch:3d}: {batch * hf_new / seconds:8.0f} tok/s ({batch * hf_new} tokens in {seconds:.2f} s)", flush=True)
    model.float()


def exactness(model, vocab: int, new_tokens: int = 48) -> None:
    rng = random.Random(0)
    prompts = [[rng.randrange(1000, vocab) for _ in range(n)] for n in (40, 57, 33, 64)]
    decoder = StaticDecoder(model, dtype=torch.float32, use_graphs=True)
    ours = decoder.generate(prompts, max_new_tokens=new_tokens, sampling=Sampling(0.0), stop_ids=set(), pad_id=0)
    width = max(len(p) for p in prompts)
    ids = torch.zeros((len(prompts), width), dtype=torch.long)
    attention = torch.zeros_like(ids)
    for i, p in enumerate(prompts):
        ids[i, width - len(p):] = torch.tensor(p)
        attention[i, width - len(p):] = 1
    ref = model.generate(input_ids=ids.cuda(), attention_mask=attention.cuda(), max_new_tokens=new_tokens,
                         min_new_tokens=new_tokens, do_sample=False, pad_token_id=0)[:, width:].tolist()
    # Greedy sequences agree up to the first differing token (a near-tie can flip one, then all after it).
    prefix = [next((j for j, (a, b) in enumerate(zip(o, r)) if a != b), new_tokens) for o, r in zip(ours, ref)]
    print(f"exactness (float32, greedy): identical prefix {prefix} of {new_tokens} tokens per prompt", flush=True)


def step_profile(model, batch: int, span: int, vocab: int, repeats: int = 200) -> None:
    """Milliseconds of one decoding step at ``batch`` rows attending to about ``span`` slots: the
    captured graph alone (model, nucleus filter, seeded draw) and the whole step (with the rows'
    bookkeeping and the check of the nucleus)."""
    decoder = StaticDecoder(model)
    prompt = span - repeats - 8
    decoder._reserve(batch, span)
    rows = _Batch(decoder, batch, repeats + 8, 0)
    stops = torch.tensor([-1], device="cuda")
    rng = random.Random(batch)
    rows.admit(list(range(batch)), [(i, [rng.randrange(1000, vocab) for _ in range(prompt)], i) for i in range(batch)],
               SAMPLING, stops)
    rows.step(SAMPLING, stops)  # captures the graph
    step = decoder._step_for(batch, min(_round(max(rows.reach)), span), SAMPLING)
    _, graph_s = timed(lambda: [decoder._run(step) for _ in range(repeats)])
    _, step_s = timed(lambda: [rows.step(SAMPLING, stops) for _ in range(repeats // 2)])
    print(f"step      batch {batch:3d}, span {span}: graph (model + draw) {1e3 * graph_s / repeats:.2f} ms, "
          f"whole step {2e3 * step_s / repeats:.2f} ms", flush=True)
    decoder = rows = None  # frees the cache before the next size
    torch.cuda.empty_cache()


def update_speed(model, rows: int, prompt_tokens: int, response_tokens: int, vocab: int) -> None:
    rng = random.Random(1)
    data = [Row(f"g{i // 8}", [rng.randrange(1000, vocab) for _ in range(prompt_tokens)],
                [rng.randrange(1000, vocab) for _ in range(response_tokens)], 0.0, rng.uniform(-1, 1)) for i in range(rows)]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6)
    settings = {"rollout": {"temperature": 0.7}, "micro_batch_size": 8, "mini_batches": 2, "clip_ratio_low": 0.2,
                "clip_ratio_high": 0.3, "clip_ratio_c": 3.0, "grad_clip": 1.0}
    ppo_update(model, optimizer, data[:8], settings, random.Random(0), 0)  # warm-up
    torch.cuda.reset_peak_memory_stats()
    stats, seconds = timed(lambda: ppo_update(model, optimizer, data, settings, random.Random(0), 0))
    print(f"update: {rows} rows x {prompt_tokens + response_tokens} tokens in {seconds:.2f} s "
          f"({stats['trained_tokens'] / seconds:.0f} tok/s); peak {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB", flush=True)
    # Where the update's time goes: its phases (marked in ppo_update) and the heaviest kernels.
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]) as prof:
        ppo_update(model, optimizer, data, settings, random.Random(0), 0)
        torch.cuda.synchronize()
    events = prof.key_averages()
    phases = {e.key: e for e in events if e.key in ("old log-probs", "forward", "backward", "optimizer step")}
    print("update phases (CPU wall ms, as marked):", ", ".join(f"{k} {e.cpu_time_total / 1e3:.0f}" for k, e in phases.items()), flush=True)
    print(events.table(sort_by="self_device_time_total", row_limit=12), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None)
    parser.add_argument("--batch", type=int, nargs="+", default=[32, 64, 128])
    parser.add_argument("--prompt-tokens", type=int, default=800)
    parser.add_argument("--new-tokens", type=int, default=768)
    parser.add_argument("--rows", type=int, default=64)
    parser.add_argument("--response-tokens", type=int, default=500)
    parser.add_argument("--skip", nargs="*", default=[], choices=["decode", "exact", "step", "update", "transformers"])
    parser.add_argument("--span", type=int, default=2048, help="attention span of the step profile")
    args = parser.parse_args()

    if args.model:
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    else:
        model = qwen_05b_shape(0)
    model = model.cuda().eval()
    vocab = model.config.vocab_size
    print(f"{args.model or 'random Qwen2.5-0.5B shape'}: {sum(p.numel() for p in model.parameters()) / 1e6:.0f}M parameters; "
          f"{torch.cuda.get_device_name()}", flush=True)
    if "exact" not in args.skip:
        exactness(model, vocab)
    if "step" not in args.skip:
        for batch in args.batch:
            step_profile(model, batch, args.span, vocab)
    if "decode" not in args.skip:
        for batch in args.batch:
            decode_speed(model, batch, args.prompt_tokens, args.new_tokens, vocab, "transformers" not in args.skip)
    if "update" not in args.skip:
        update_speed(model.train(), args.rows, args.prompt_tokens, args.response_tokens, vocab)


if __name__ == "__main__":
    main()
