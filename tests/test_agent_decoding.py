"""The static-cache decoder computes what the Hugging Face model computes, and samples as transformers does."""

from __future__ import annotations

import pytest
import torch

from audiobook_rl.agent.decoding import CANDIDATES, Sampling, StaticDecoder, candidates, sample, supports

PROMPTS = [[5, 6, 7, 8, 9, 10], [11, 12, 13], [20, 21, 22, 23, 24, 25, 26, 27, 28], [40, 41]]


def tiny_qwen(seed: int = 0, **overrides):
    """A Qwen2 with large random weights: its greedy tokens vary, so any difference in the math shows."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    settings = dict(vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, max_position_embeddings=512, tie_word_embeddings=True)
    settings.update(overrides)
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(Qwen2Config(**settings)).eval()
    for p in model.parameters():
        p.data.normal_(0, 0.4)
    return model


def hf_greedy(model, prompts, new_tokens, stop=None):
    width = max(len(p) for p in prompts)
    ids = torch.zeros((len(prompts), width), dtype=torch.long)
    attention = torch.zeros_like(ids)
    for i, p in enumerate(prompts):
        ids[i, width - len(p):] = torch.tensor(p)
        attention[i, width - len(p):] = 1
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=attention, max_new_tokens=new_tokens, do_sample=False,
                             eos_token_id=stop, pad_token_id=0)
    rows = []
    for row in out[:, width:].tolist():
        end = next((j for j, t in enumerate(row) if t == stop), None)
        rows.append(row[: end + 1] if end is not None else row)
    return rows


@pytest.mark.parametrize("untied", [False, True])
@pytest.mark.parametrize("round_batch", [False, True])
def test_greedy_tokens_equal_transformers_generate(round_batch, untied):
    model = tiny_qwen(tie_word_embeddings=not untied)
    ours = StaticDecoder(model, round_batch=round_batch).generate(PROMPTS, max_new_tokens=40, sampling=Sampling(0.0),
                                                                  stop_ids=set(), pad_id=0)
    assert ours == hf_greedy(model, PROMPTS, 40)
    assert len({tuple(r) for r in ours}) == len(PROMPTS)  # the rows differ: the check is not vacuous


def test_rows_stop_at_their_own_stop_token_and_leave_the_batch():
    model = tiny_qwen(seed=3)
    free = hf_greedy(model, PROMPTS, 40)
    # A token that one row emits early and another late (or never): rows finish at different steps.
    stop = free[0][20]
    expected = hf_greedy(model, PROMPTS, 40, stop=stop)
    assert len({len(r) for r in expected}) > 1
    for round_batch in (False, True):
        ours = StaticDecoder(model, round_batch=round_batch).generate(
            PROMPTS, max_new_tokens=40, sampling=Sampling(0.0), stop_ids={stop}, pad_id=0)
        assert ours == expected


def test_decoding_follows_the_model_after_an_update():
    model = tiny_qwen()
    decoder = StaticDecoder(model)
    before = decoder.generate(PROMPTS, max_new_tokens=12, sampling=Sampling(0.0), stop_ids=set(), pad_id=0)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.3)  # what an optimizer step does: in place
    after = decoder.generate(PROMPTS, max_new_tokens=12, sampling=Sampling(0.0), stop_ids=set(), pad_id=0)
    assert after == hf_greedy(model, PROMPTS, 12) and after != before


def test_sampling_is_seeded_and_top_k_1_is_greedy():
    model = tiny_qwen()
    decoder = StaticDecoder(model)
    draw = lambda sampling: decoder.generate(PROMPTS, max_new_tokens=16, sampling=sampling, stop_ids=set(), pad_id=0)  # noqa: E731
    torch.manual_seed(7)
    first = draw(Sampling(1.0))
    torch.manual_seed(7)
    assert draw(Sampling(1.0)) == first
    assert first != draw(Sampling(0.0))
    assert draw(Sampling(1.0, top_k=1)) == draw(Sampling(0.0)) == draw(Sampling(1.0, top_p=1e-6))


def _kept_by_transformers(logits, sampling):
    from transformers import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

    scores = TemperatureLogitsWarper(sampling.temperature)(None, logits.clone())
    if sampling.top_k:
        scores = TopKLogitsWarper(sampling.top_k)(None, scores)
    if sampling.top_p < 1:
        scores = TopPLogitsWarper(sampling.top_p)(None, scores)
    return [set(torch.nonzero(row > float("-inf")).flatten().tolist()) for row in scores]


def _mass_above(row, token, sampling):
    """The probability of the tokens more likely than ``token`` after temperature and top-k (float64)."""
    scaled = row.double() / sampling.temperature
    if sampling.top_k:
        scaled = scaled.masked_fill(scaled < torch.topk(scaled, sampling.top_k).values[-1], float("-inf"))
    probs = torch.softmax(scaled, dim=-1)
    return float(probs[probs > probs[token]].sum())


def _kept_by_us(logits, sampling):
    values, order = candidates(logits, sampling)
    if order is None:
        order = torch.arange(logits.shape[-1]).expand_as(logits)
    return [set(o[v > float("-inf")].tolist()) for v, o in zip(values, order)]


@pytest.mark.parametrize(
    "sampling",
    [Sampling(0.7, top_p=0.95), Sampling(1.0, top_p=0.5), Sampling(0.7, top_k=20), Sampling(1.3, top_p=0.9, top_k=50),
     Sampling(1.0)],
)
def test_filters_keep_the_tokens_transformers_keeps(sampling):
    torch.manual_seed(0)
    # Peaked rows (the nucleus lies among the first candidates) and flat rows (it does not: the
    # whole vocabulary is sorted), as a vocabulary of Qwen's size.
    peaked = torch.randn(3, 151936) * 3
    flat = torch.randn(2, 151936) * 0.01
    for logits in (peaked, flat, torch.cat([peaked, flat])):
        ours, theirs = _kept_by_us(logits, sampling), _kept_by_transformers(logits, sampling)
        for row, (a, b) in enumerate(zip(ours, theirs)):
            # The sets agree but for tokens whose cumulative mass equals top_p to float precision
            # (transformers sums the sorted probabilities from the other end). A float32 cumulative
            # sum over 151,936 probabilities rounds differently from one CPU's vector width to
            # another's (2.6e-5 off, and two such tokens in a flat row, on one machine): 1e-4.
            for token in a ^ b:
                assert abs(_mass_above(logits[row], token, sampling) - sampling.top_p) < 1e-4
            assert len(a ^ b) <= 2
    if sampling.top_p < 1 and not sampling.top_k:
        assert max(len(k) for k in _kept_by_us(flat, sampling)) > CANDIDATES


def test_draws_come_from_the_nucleus_only():
    torch.manual_seed(1)
    logits = torch.randn(4, 1000) * 4
    allowed = _kept_by_transformers(logits, Sampling(0.8, top_p=0.6))
    for _ in range(50):
        for row, token in enumerate(sample(logits, Sampling(0.8, top_p=0.6)).tolist()):
            assert token in allowed[row]


def test_other_architectures_are_left_to_transformers():
    assert supports(tiny_qwen())
    assert not supports(tiny_qwen(use_sliding_window=True, sliding_window=4))
    assert not supports(tiny_qwen(rope_scaling={"rope_type": "linear", "factor": 2.0}))


# -- continuous batching -----------------------------------------------------------------------

STOP = 63


def successor_model():
    """A real Qwen2 whose weights are set by hand so that, greedily, token ``t`` is followed by ``t + 1``
    up to ``STOP``: a prompt ending in ``t`` decodes ``STOP - t`` tokens, a length the test chooses.

    Attention and MLP add nothing (zero output projections), the embedding is the identity, and
    the output head maps token ``t`` to ``t + 1``.
    """
    model = tiny_qwen(vocab_size=64, hidden_size=64, num_hidden_layers=1, tie_word_embeddings=False)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        model.model.embed_tokens.weight.copy_(torch.eye(64))
        model.model.norm.weight.fill_(1.0)
        head = model.lm_head.weight
        for t in range(64):
            head[min(t + 1, STOP), t] = 1.0
    return model


def test_a_follow_up_decodes_while_a_longer_sequence_of_its_batch_still_runs():
    decoder = StaticDecoder(successor_model())
    ended = []

    def then(seq, tokens):
        ended.append(seq)
        return [7, 50] if seq == 0 else None  # the short draft's follow-up (its rewrite)

    out = decoder.generate([[3, 60], [1, 0]], max_new_tokens=64, sampling=Sampling(0.0), stop_ids={STOP}, pad_id=0,
                           then=then, max_rows=2)
    assert out == [[61, 62, 63], list(range(1, 64)), list(range(51, 64))]
    # The follow-up of sequence 0 started when its row freed and ended before sequence 1 did.
    assert ended == [0, 2, 1]


def test_without_follow_ups_every_sequence_still_waits_for_no_other():
    decoder = StaticDecoder(successor_model())
    ended = []
    prompts = [[60], [0], [55], [58], [40]]  # 3, 63, 8, 5 and 23 tokens
    out = decoder.generate(prompts, max_new_tokens=64, sampling=Sampling(0.0), stop_ids={STOP}, pad_id=0,
                           then=lambda seq, tokens: ended.append(seq), max_rows=2)
    assert out == [list(range(p[0] + 1, 64)) for p in prompts]
    # While sequence 1 decoded its 63 tokens, three shorter ones passed through the other row.
    assert ended[:4] == [0, 2, 3, 1]


@pytest.mark.parametrize("max_rows", [1, 2, 3])
def test_refilled_rows_keep_greedy_tokens_equal_to_transformers(max_rows):
    model = tiny_qwen(seed=3)
    prompts = PROMPTS + [[90, 91, 92, 93, 94], [7], [60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70]]
    stop = hf_greedy(model, PROMPTS, 40)[0][20]
    expected = hf_greedy(model, prompts, 40, stop=stop)
    assert len({len(r) for r in expected}) > 2  # rows end at different steps
    ours = StaticDecoder(model).generate(prompts, max_new_tokens=40, sampling=Sampling(0.0), stop_ids={stop}, pad_id=0,
                                         max_rows=max_rows)
    assert ours == expected


def test_a_follow_up_longer_than_the_cache_grows_it():
    model = tiny_qwen(seed=4)
    decoder = StaticDecoder(model)
    long_prompt = [(17 * i) % 290 + 5 for i in range(300)]
    out = decoder.generate([[5, 6, 7]], max_new_tokens=10, sampling=Sampling(0.0), stop_ids=set(), pad_id=0,
                           then=lambda seq, tokens: long_prompt if seq == 0 else None)
    assert out == hf_greedy(model, [[5, 6, 7]], 10) + hf_greedy(model, [long_prompt], 10)


def test_a_sequence_draws_the_same_tokens_whatever_decodes_beside_it():
    model = tiny_qwen()
    decoder = StaticDecoder(model)

    def draw(max_rows, sampling=Sampling(1.0, top_p=0.9)):
        torch.manual_seed(11)  # the per-sequence seeds come from the global generator
        return decoder.generate(PROMPTS, max_new_tokens=24, sampling=sampling, stop_ids=set(), pad_id=0,
                                max_rows=max_rows, then=lambda seq, tokens: tokens[:5] if seq < 2 else None)

    together = draw(4)
    assert len(together) == len(PROMPTS) + 2
    assert draw(1) == draw(3) == together
    assert together != draw(4, Sampling(0.0))


def test_seeded_draws_follow_the_filtered_distribution():
    logits = torch.tensor([[2.0, 1.0, 0.5, 0.0, -1.0, -3.0]] * 2)
    sampling = Sampling(0.8, top_p=0.9)
    counts = torch.zeros(2, 6)
    for k in range(6000):
        drawn = sample(logits, sampling, seeds=torch.tensor([12345, 777]), counters=torch.full((2,), k))
        counts[torch.arange(2), drawn] += 1
    values, order = candidates(logits, sampling)
    expected = torch.zeros(2, 6).scatter(1, order, torch.softmax(values, dim=-1))
    assert (counts / 6000 - expected).abs().max() < 0.025
    assert counts[:, expected[0] == 0].sum() == 0  # never outside the nucleus
    again = sample(logits, sampling, seeds=torch.tensor([12345, 777]), counters=torch.full((2,), 3))
    assert torch.equal(again, sample(logits, sampling, seeds=torch.tensor([12345, 777]), counters=torch.full((2,), 3)))
