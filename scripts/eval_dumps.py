#!/usr/bin/env python3
"""Chapter headings of `tingshu split` on whole books turned into dumps.

  eval_dumps.py BOOK.txt [BOOK.txt …] [--traditional] [--errors]

Each BOOK has its chapter headings on lines of their own (第N回 上联 下联,
第N章 标题; UTF-8, GB18030 or Big5, whichever reads as more common Chinese
text). The script makes the dump a book site would serve: the whole book on
one line, every whitespace and the colon after a heading's number removed
(第一回：宴桃園… → 第一回宴桃園…); then it splits the dump with tingshu and
counts, by each heading's number and unit (第N回, 第N章), the headings found,
the titles found exactly and the headings that are not the book's (a
multiset: a number that comes twice must be found twice). --traditional
converts the dump to Traditional with OpenCC's phrase tables
(`examples/s2t.rs`, built here if missing; the conversion the dump tests use,
which writes the 回心 of 第十四回心猿… as 迴心). TINGSHU_BIN names another
build (default: this checkout's target/release/tingshu).

Only the standard library.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter

HEADING = re.compile(r"^\s*第[0-9０-９一二三四五六七八九十百千零〇○两]+[回迴章]")
KEY = re.compile(r"^第[^回迴章]+[回迴章]")


COMMON = "的一是不了人我在有他这這个個们們来來到时時大地为為子中你说說道"


def read(path):
    raw = open(path, "rb").read()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    # Big5 bytes also decode as GB18030 (as nonsense): keep the reading
    # with more common characters.
    readings = []
    for encoding in ("gb18030", "big5"):
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError:
            continue
        readings.append((sum(text.count(c) for c in COMMON), text))
    if not readings:
        sys.exit(f"eval_dumps: {path}: neither UTF-8, GB18030 nor Big5")
    return max(readings)[1]


def to_traditional(text):
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    s2t = os.path.join(here, "target/release/examples/s2t")
    if not os.path.exists(s2t):
        subprocess.run(
            ["cargo", "build", "--release", "--quiet", "--example", "s2t"], cwd=here, check=True
        )
    return subprocess.run(
        [s2t], input=text, capture_output=True, text=True, encoding="utf-8", check=True
    ).stdout


def dump(text):
    """The one-line dump of `text` and the headings it must give."""
    headings, out = [], []
    for line in text.splitlines():
        if HEADING.match(line):
            line = re.sub(r"[\s:：]+", "", line)
            headings.append(line)
        out.append(re.sub(r"\s+", "", line))
    return "".join(out), headings


def split_titles(binary, text):
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "book.txt")
        open(path, "w", encoding="utf-8").write(text)
        run = subprocess.run(
            [binary, "split", path, "--format", "jsonl"],
            capture_output=True,
            text=True,
            encoding="utf-8",
            check=True,
        )
    titles = []
    for line in run.stdout.splitlines():
        r = json.loads(line)
        if r["chapter"] > 0 and (not titles or titles[-1][0] != r["chapter"]):
            titles.append((r["chapter"], r["title"]))
    return [t for _, t in titles]


def key(title):
    """第N回 / 第N章 (迴 as 回), or None."""
    m = KEY.match(title or "")
    return m.group(0).replace("迴", "回") if m else None


def main():
    flags = {a for a in sys.argv[1:] if a.startswith("--")}
    if flags - {"--traditional", "--errors"} or len(flags) == len(sys.argv) - 1:
        sys.exit(__doc__)
    books = [a for a in sys.argv[1:] if not a.startswith("--")]
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    binary = os.environ.get("TINGSHU_BIN", os.path.join(here, "target/release/tingshu"))
    for book in books:
        line, want = dump(read(book))
        if "--traditional" in flags and want:
            # After the dump, as the dump tests do: 第十四回心猿 → 第十四迴心猿.
            line, heads = to_traditional(line + "\n" + "\n".join(want)).split("\n", 1)
            want = heads.split("\n")
        got = split_titles(binary, line)
        got_keys = Counter(key(t) for t in got if key(t))
        want_keys = Counter(key(t) for t in want)
        found = sum((got_keys & want_keys).values())
        exact = sum((Counter(got) & Counter(want)).values())
        extra = got_keys - want_keys
        print(
            f"{os.path.basename(book)}: {len(got)} chapters; headings found {found}/{len(want)}, "
            f"titles exact {exact}, headings not the book's {sum(extra.values())}"
        )
        if "--errors" in flags:
            for t in (Counter(want) - Counter(got)).elements():
                print(f"  want {t}  got {[g for g in got if key(g) == key(t)]}")
            for k in extra.elements():
                print(f"  not a heading: {[g for g in got if key(g) == k]}")


if __name__ == "__main__":
    main()
