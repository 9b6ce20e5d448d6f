#!/usr/bin/env python3
"""Gender evaluation of `tingshu split --suggest-cast` (see eval-genders.sh).

  eval_genders.py cast SUGGESTED.toml TRUTH [--errors]
      gender right / wrong / unknown over the suggested characters that the
      truth list names (by name or alias)
  eval_genders.py lines WORKDIR SCRIPT.jsonl SUGGESTED.toml TRUTH [--errors]
      share of the target quotes of a WP2021 book (eval_speakers.py make)
      that would be voiced with the wrong gender without a cast file: the
      predicted speaker's suggested gender against the gold speaker's; a
      quote with no speaker or a speaker of unknown gender gets the neutral
      dialogue voice (counted apart, not as wrong), unless the script gives
      the gender of someone unnamed (她父亲说：); a quote marked
      gender_unsure gets the neutral voice

TRUTH has one character a line: `0|1 name alias…` (0 female, 1 male), as
WP2021's name_list.txt; lines starting with # are comments.
"""
import json
import sys


def truth(path):
    out = {}
    for line in open(path, encoding="utf-8"):
        if line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) < 2 or parts[0] not in "01":
            continue
        g = "female" if parts[0] == "0" else "male"
        for name in parts[1:]:
            out.setdefault(name, (parts[1], g))
    return out


def suggested(path):
    """[(name, aliases, gender, comments)] from a suggested cast file."""
    out, comments, cur = [], [], None
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith("# ") and cur is None and not line.startswith("# voice"):
            comments.append(line[2:])
        elif line == "[[character]]":
            cur = {"comments": comments}
            comments = []
        elif cur is not None and line.startswith("name = "):
            cur["name"] = json.loads(line.split("=", 1)[1])
        elif cur is not None and line.startswith("aliases = "):
            cur["aliases"] = json.loads(line.split("=", 1)[1])
        elif cur is not None and line.startswith("gender = "):
            cur["gender"] = json.loads(line.split("=", 1)[1])
            out.append(cur)
            cur = None
    return out


def match(c, known):
    for n in [c["name"]] + c.get("aliases", []):
        if n in known:
            return known[n]
    return None


def cast(toml, truth_path, show):
    known = truth(truth_path)
    chars = suggested(toml)
    right = wrong = unknown = 0
    errors, unmatched = [], []
    for c in chars:
        t = match(c, known)
        if t is None:
            unmatched.append(c["name"])
            continue
        if c["gender"] == "unknown":
            unknown += 1
            errors.append(("unknown", c, t))
        elif c["gender"] == t[1]:
            right += 1
        else:
            wrong += 1
            errors.append(("wrong", c, t))
    n = right + wrong + unknown
    print(f"suggested {len(chars)}, in the truth list {n}")
    if n:
        print(f"gender right {right}/{n} = {100 * right / n:.1f}%, wrong {wrong}, unknown {unknown} = {100 * unknown / n:.1f}%")
    if show:
        for kind, c, t in errors:
            print(f"  {kind}: {c['name']} ({t[0]}, {t[1]}) got {c['gender']}; {' | '.join(c['comments'])}")
        print(f"  not in the truth list: {' '.join(unmatched)}")


def lines(workdir, jsonl, toml, truth_path, show_errors=False):
    known = truth(truth_path)
    gender_of = {}
    for c in suggested(toml):
        for n in [c["name"]] + c.get("aliases", []):
            gender_of.setdefault(n, c["gender"])
    gold, texts, shown = {}, {}, []
    for line in open(f"{workdir}/gold.tsv", encoding="utf-8"):
        n, speaker, _category, text = line.rstrip("\n").split("\t")
        gold[int(n)] = speaker
        texts[int(n)] = text
    predicted = {}
    for line in open(jsonl, encoding="utf-8"):
        seg = json.loads(line)
        title = seg["title"]
        if not (title.startswith("第") and title.endswith("章")):
            continue
        n = int(title[1:-1])
        if seg["paragraph"] == 11 and seg["kind"] == "dialogue" and n not in predicted:
            predicted[n] = (seg["speaker"], seg.get("unnamed"), seg.get("gender_unsure", False))
    wrong = neutral = right = nogold = guessed = 0
    for n, speaker in gold.items():
        g = known.get(speaker, (None, None))[1]
        if g is None:
            nogold += 1
            continue
        p, unnamed, unsure = predicted.get(n, (None, None, False))
        # Someone the book does not name (她父亲说：) has that gender's
        # voice; a guess between genders the neutral one.
        voice = gender_of.get(p, "unknown") if p else unnamed or "unknown"
        if unsure:
            voice = "unknown"
        if voice == "unknown":
            neutral += 1
        elif voice == g:
            right += 1
        else:
            wrong += 1
            # The right speaker whose gender was guessed wrong, against
            # another speaker of the other gender.
            guessed += known.get(p, (None, None))[0] == speaker
            shown.append(f"  #{n} gold {speaker} ({g}), got {p or unnamed} ({voice}): {texts[n][:60]}")
    total = wrong + neutral + right
    print(
        f"quotes {total}: voice of the right gender {right} ({100 * right / total:.1f}%), "
        f"wrong gender {wrong} ({100 * wrong / total:.1f}%), neutral voice {neutral} ({100 * neutral / total:.1f}%)"
        + f" [gender guessed wrong {guessed}, speaker wrong {wrong - guessed}]"
        + (f"; {nogold} gold speakers without a gender" if nogold else "")
    )
    if show_errors:
        print("\n".join(shown))


if __name__ == "__main__":
    a = sys.argv[1:]
    if len(a) >= 3 and a[0] == "cast":
        cast(a[1], a[2], "--errors" in a)
    elif len(a) >= 5 and a[0] == "lines":
        lines(a[1], a[2], a[3], a[4], "--errors" in a)
    else:
        sys.exit(__doc__)
