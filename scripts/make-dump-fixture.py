#!/usr/bin/env python3
"""Makes a "dump" test fixture from a public-domain novel: short excerpts of
its chapters on ONE line, with every line break and every separator after
the headings removed (第二回宴桃园豪杰三结义斩黄巾英雄首立功话说…), as
some book sites serve them.

  make-dump-fixture.py SOURCE.txt OUT_STEM [--chapters N] [--chars M]

SOURCE has one `第N回 上联 下联` heading per line. Writes OUT_STEM.txt (the
one-line dump: for each of the first N chapters, the heading with its spaces
removed, the first M characters of its text cut at a sentence end, and the
chapter's last sentence) and OUT_STEM.titles (the expected titles, one a line).
"""
import re
import sys

HEADING = re.compile(r"^第[一二三四五六七八九十百零〇]+回[ \t\u3000]*(.*)$")
ENDS = "。！？"


def chapters(text):
    out = []
    for line in text.splitlines():
        m = HEADING.match(line.strip())
        if m:
            out.append([re.sub(r"[\s:：]+", "", line.strip()), []])
        elif out:
            body = re.sub(r"\s+", "", line)
            if body:
                out[-1][1].append(body)
    return out


def sentence_ends(text):
    """Offsets just after the sentence ends outside quotes."""
    depth, out = 0, []
    for i, c in enumerate(text):
        if c in "“「":
            depth += 1
        elif c in "”」":
            depth = max(0, depth - 1)
            if depth == 0 and i > 0 and text[i - 1] in ENDS:
                out.append(i + 1)
        elif c in ENDS and depth == 0:
            out.append(i + 1)
    return out


def excerpt(paragraphs, chars):
    body = "".join(paragraphs)
    ends = sentence_ends(body)
    cut = max([e for e in ends if e <= chars], default=0) or (ends[0] if ends else len(body))
    head = body[:cut]
    # The chapter's last sentence (且听下文分解。), when not already taken.
    tail = body.rstrip()
    starts = [tail.rfind(e, 0, len(tail) - 1) for e in ENDS]
    last = tail[max(starts) + 1 :] if max(starts) > 0 else ""
    if last and not head.endswith(last) and len(last) <= 60 and last[-1] in ENDS:
        head += last
    if head and head[-1] not in ENDS:
        head += "。"
    return head


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    source, stem = args[0], args[1]
    n = int(args[args.index("--chapters") + 1]) if "--chapters" in args else 40
    chars = int(args[args.index("--chars") + 1]) if "--chars" in args else 120
    found = chapters(open(source, encoding="utf-8").read())[:n]
    with open(f"{stem}.txt", "w", encoding="utf-8") as dump, open(
        f"{stem}.titles", "w", encoding="utf-8"
    ) as titles:
        for heading, paragraphs in found:
            dump.write(heading + excerpt(paragraphs, chars))
            titles.write(heading + "\n")
        dump.write("\n")
    print(f"{len(found)} chapters", file=sys.stderr)


if __name__ == "__main__":
    main()
