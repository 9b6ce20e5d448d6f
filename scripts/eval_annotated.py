#!/usr/bin/env python3
"""Speakers and voices of a book whose every quote carries its speaker (see
eval-annotated.sh).

  eval_annotated.py strip SOURCE WORKDIR
      -> WORKDIR/book.txt (the tags removed), WORKDIR/gold.jsonl (each
      quote's text and speaker, in order)
  eval_annotated.py score WORKDIR SCRIPT.jsonl SUGGESTED.toml TRUTH [--errors]

In SOURCE every closing quote mark is followed by a tag: ⟦Name⟧ (the
speaker's name in TRUTH), ⟦-女⟧ / ⟦-男⟧ (someone unnamed, by gender), ⟦-众⟧
(a crowd) or ⟦.⟧ (quote marks around something that is not speech).
TRUTH is in WP2021's name_list.txt format (`0|1 name alias…`, 0 female).

Scored, without a cast file: the share of quotes of named characters given
to the right one (discovered names mapped to TRUTH's by name or alias); the
genders of the suggested characters TRUTH names; and the share of spoken
quotes (crowds left out) that would be voiced with the wrong gender, as
eval_genders.py counts it (no speaker, a speaker of unknown gender or a
quote marked gender_unsure gets the neutral voice, counted apart).
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import eval_genders  # noqa: E402

TAG = re.compile(r"”⟦([^⟧]*)⟧")


def strip(source, workdir):
    text = open(source, encoding="utf-8").read()
    gold = []
    for m in TAG.finditer(text):
        start = text.rfind("“", 0, m.start())
        if start < 0:
            sys.exit(f"{source}: a tag at byte {m.start()} has no opening quote mark")
        gold.append({"text": re.sub(r"⟦[^⟧]*⟧", "", text[start : m.start() + 1]), "speaker": m.group(1)})
    with open(f"{workdir}/book.txt", "w", encoding="utf-8") as out:
        out.write(TAG.sub("”", text))
    with open(f"{workdir}/gold.jsonl", "w", encoding="utf-8") as out:
        for g in gold:
            out.write(json.dumps(g, ensure_ascii=False) + "\n")
    print(f"{len(gold)} tagged quotes", file=sys.stderr)


def aligned(gold, segments):
    """(gold, segment or None) for each gold quote: the dialogue segments
    matched in order by their text."""
    out, k = [], 0
    for g in gold:
        found = None
        for j in range(k, min(k + 4, len(segments))):
            if segments[j]["text"].strip() == g["text"]:
                found, k = segments[j], j + 1
                break
        out.append((g, found))
    return out


def score(workdir, jsonl, toml, truth_path, show):
    known = eval_genders.truth(truth_path)
    suggested = eval_genders.suggested(toml)
    gender_of, canonical = {}, {}
    for c in suggested:
        t = eval_genders.match(c, known)
        for n in [c["name"]] + c.get("aliases", []):
            gender_of.setdefault(n, c["gender"])
            if t:
                canonical.setdefault(n, t[0])
    gold = [json.loads(l) for l in open(f"{workdir}/gold.jsonl", encoding="utf-8")]
    segments = [
        s for s in (json.loads(l) for l in open(jsonl, encoding="utf-8")) if s["kind"] == "dialogue"
    ]
    pairs = aligned(gold, segments)
    named = right = unmatched = 0
    voices = {"right": 0, "wrong": 0, "neutral": 0}
    # Of the quotes in a wrong-gender voice: the right speaker with a wrong
    # gender guess, or another speaker.
    wrong_guess = wrong_speaker = 0
    errors = []
    for g, s in pairs:
        who = g["speaker"]
        if who in (".", "-众"):
            continue
        if s is None:
            unmatched += 1
            continue
        got = s.get("speaker")
        if not who.startswith("-"):
            named += 1
            ok = canonical.get(got, got) == known.get(who, (who,))[0]
            right += ok
            if not ok:
                errors.append((g["text"], who, got))
        want = {"-女": "female", "-男": "male"}.get(who) or known.get(who, (None, None))[1]
        voice = gender_of.get(got, "unknown") if got else (s.get("unnamed") or "unknown")
        if s.get("gender_unsure"):
            voice = "unknown"
        if voice == "unknown":
            voices["neutral"] += 1
        elif voice == want:
            voices["right"] += 1
        else:
            voices["wrong"] += 1
            same = got and not who.startswith("-") and canonical.get(got, got) == known.get(who, (who,))[0]
            wrong_guess += bool(same)
            wrong_speaker += not same
    total = sum(voices.values())
    print(f"speakers {right}/{named} = {100 * right / max(named, 1):.1f}% (quotes of named characters)"
          + (f"; {unmatched} quotes not found in the script" if unmatched else ""))
    print(
        f"voices of {total} spoken quotes: right gender {voices['right']} ({100 * voices['right'] / max(total, 1):.1f}%), "
        f"wrong gender {voices['wrong']} ({100 * voices['wrong'] / max(total, 1):.1f}%), "
        f"neutral {voices['neutral']} ({100 * voices['neutral'] / max(total, 1):.1f}%)"
        f" [gender guessed wrong {wrong_guess}, speaker wrong {wrong_speaker}]"
    )
    eval_genders.cast(toml, truth_path, show)
    found = {eval_genders.match(c, known)[0] for c in suggested if eval_genders.match(c, known)}
    names = {v[0] for v in known.values()}
    print(f"characters of the truth list found: {len(found)}/{len(names)}")
    if show:
        for text, who, got in errors:
            print(f"  gold {who}, got {got}: {text[:60]}")


if __name__ == "__main__":
    a = sys.argv[1:]
    if len(a) == 3 and a[0] == "strip":
        strip(a[1], a[2])
    elif len(a) >= 5 and a[0] == "score":
        score(a[1], a[2], a[3], a[4], "--errors" in a)
    else:
        sys.exit(__doc__)
