"""``audiobook-rl``: one-off use outside the pipeline.

    audiobook-rl label [--backend NAME] [FILE|-]     print the script JSON of one excerpt
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


def cmd_label(args: argparse.Namespace) -> int:
    from .corpus import Slice
    from .labeling import make_labeler

    text = _read_input(args.file)
    settings = {"backend": args.backend}
    labeler = make_labeler(settings)
    [script] = labeler.label([Slice("cli", text, 0, len(text))])
    print(json.dumps([s.to_dict() for s in script], ensure_ascii=False, indent=None if args.compact else 2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="audiobook-rl", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    label = sub.add_parser("label", help="print the audiobook script JSON of one excerpt")
    label.add_argument("file", nargs="?", default="-", help="UTF-8/GBK text file, or - for stdin (default)")
    label.add_argument("--backend", default="rules", help="labeling backend (default: rules)")
    label.add_argument("--compact", action="store_true", help="print the JSON on one line")
    label.set_defaults(func=cmd_label)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except UserError as err:
        print(f"audiobook-rl: error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
