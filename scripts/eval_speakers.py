#!/usr/bin/env python3
"""Speaker-attribution evaluation on the WP2021 format (see eval-speakers.sh).

  eval_speakers.py make DATA NAMES WORKDIR   -> WORKDIR/book.txt, WORKDIR/cast.toml, WORKDIR/gold.tsv
  eval_speakers.py cut DATA PARTS WORKDIR    -> WORKDIR/part0.txt … (instances in PARTS equal books)
  eval_speakers.py score WORKDIR SCRIPT.jsonl [--errors N] [--map-names]

--map-names maps predicted names through the cast's aliases (for a run
without --cast, where discovered names may be aliases such as 少平).

Each instance is 21 lines with the target quote on line 11, then
"Speaker: …", "Speaker index: …", "Category: …" and a blank line. The book
gets one chapter per instance (第N章), so line 11 is paragraph 11.
"""
import json
import sys
from collections import defaultdict

CONTEXT = 21
# Lines of one instance: its index line, the context, three metadata lines, a blank.
INSTANCE = 1 + CONTEXT + 4
TARGET = 11


def toml_str(s):
    return json.dumps(s, ensure_ascii=False)


def make(data, names, workdir):
    lines = open(data, encoding="utf-8").read().split("\n")
    instances = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("Instance index:"):
            i += 1
            continue
        context = lines[i + 1 : i + 1 + CONTEXT]
        meta = lines[i + 1 + CONTEXT : i + 4 + CONTEXT]
        speaker = meta[0].split(":", 1)[1].strip()
        category = meta[2].split(":", 1)[1].strip()
        instances.append((context, speaker, category))
        i += 1 + CONTEXT + 3
    with open(f"{workdir}/book.txt", "w", encoding="utf-8") as book, open(
        f"{workdir}/gold.tsv", "w", encoding="utf-8"
    ) as gold:
        for n, (context, speaker, category) in enumerate(instances, 1):
            # Empty context lines would shift paragraph numbers; keep them visible.
            body = [l.strip() or "……" for l in context]
            book.write(f"第{n}章\n" + "\n".join(body) + "\n")
            gold.write(f"{n}\t{speaker}\t{category}\t{body[TARGET - 1]}\n")
    owned = {}
    with open(f"{workdir}/cast.toml", "w", encoding="utf-8") as cast:
        for line in open(names, encoding="utf-8"):
            parts = line.split()
            if len(parts) < 2:
                continue
            gender = {"1": "male", "0": "female"}.get(parts[0], "unknown")
            name, aliases = parts[1], []
            if name in owned:
                continue
            owned[name] = name
            for a in parts[2:]:
                if a not in owned:
                    owned[a] = name
                    aliases.append(a)
            cast.write(
                f"[[character]]\nname = {toml_str(name)}\naliases = [{', '.join(map(toml_str, aliases))}]\ngender = \"{gender}\"\n\n"
            )
    print(f"{len(instances)} instances", file=sys.stderr)


def cut(data, parts):
    """The instances of DATA in PARTS books of equal size (what is left over
    is dropped), each as the text of a WP2021 file."""
    lines = open(data, encoding="utf-8").read().split("\n")
    starts = [i for i, l in enumerate(lines) if l.startswith("Instance index:")]
    size = len(starts) // parts
    return [
        "".join("\n".join(lines[i : i + INSTANCE]) + "\n" for i in starts[p * size : (p + 1) * size])
        for p in range(parts)
    ]


def alias_map(workdir):
    """Name or alias -> canonical name, from the generated cast file."""
    canonical, names = {}, {}
    name = None
    for line in open(f"{workdir}/cast.toml", encoding="utf-8"):
        if line.startswith("name = "):
            name = json.loads(line.split("=", 1)[1])
            names[name] = name
        elif line.startswith("aliases = ") and name:
            for a in json.loads(line.split("=", 1)[1]):
                names.setdefault(a, name)
    canonical.update(names)
    return canonical


def score(workdir, jsonl, show_errors=0, map_names=False):
    names = alias_map(workdir) if map_names else {}
    gold = {}
    for line in open(f"{workdir}/gold.tsv", encoding="utf-8"):
        n, speaker, category, text = line.rstrip("\n").split("\t")
        gold[int(n)] = (speaker, category, text)
    predicted = {}
    for line in open(jsonl, encoding="utf-8"):
        seg = json.loads(line)
        title = seg["title"]
        if not (title.startswith("第") and title.endswith("章")):
            continue
        n = int(title[1:-1])
        if seg["paragraph"] == TARGET and seg["kind"] == "dialogue" and n not in predicted:
            predicted[n] = names.get(seg["speaker"], seg["speaker"])
    right = defaultdict(int)
    total = defaultdict(int)
    errors = []
    for n, (speaker, category, text) in sorted(gold.items()):
        got = predicted.get(n, "<no dialogue>")
        for key in ("overall", category):
            total[key] += 1
            right[key] += got == speaker
        if got != speaker:
            errors.append((n, category, speaker, got, text))
    for key in ["overall"] + sorted(k for k in total if k != "overall"):
        print(f"{key:<10} {right[key]:>4}/{total[key]:<4} {100 * right[key] / total[key]:5.1f}%")
    # What the wrong ones were: the speaker never given any quote of the
    # book (not found as a character), no speaker given, or another one.
    found = set(predicted.values())
    kinds = defaultdict(int)
    for _, _, speaker, got, _ in errors:
        if speaker not in found:
            kinds["speaker never found"] += 1
        elif got in (None, "<no dialogue>"):
            kinds["no speaker given"] += 1
        else:
            kinds["another speaker"] += 1
    print("errors     " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    for n, category, speaker, got, text in errors[:show_errors]:
        print(f"  #{n - 1} {category}: gold {speaker}, got {got}: {text}")


if __name__ == "__main__":
    if len(sys.argv) >= 5 and sys.argv[1] == "make":
        make(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) >= 5 and sys.argv[1] == "cut":
        for p, text in enumerate(cut(sys.argv[2], int(sys.argv[3]))):
            with open(f"{sys.argv[4]}/part{p}.txt", "w", encoding="utf-8") as out:
                out.write(text)
    elif len(sys.argv) >= 4 and sys.argv[1] == "score":
        rest = sys.argv[4:]
        n = int(rest[rest.index("--errors") + 1]) if "--errors" in rest else 0
        score(sys.argv[2], sys.argv[3], n, map_names="--map-names" in rest)
    else:
        sys.exit(__doc__)
