#!/usr/bin/env python3
"""Length statistics of a conversation prompt set (data/conversations.jsonl format).

Usage: python3 data/prompt_stats.py [FILE]   (default: conversations.jsonl next to this script)

Checks the format too (unique ids, lang, 2-5 turns, no turn under 6 words) and exits 1
when a line breaks it, so it doubles as the validator for user-supplied sets.

Word counting rule: whitespace-separated tokens that contain a letter or digit, plus the
number of CJK ideographs divided by 1.5 (written Chinese has no spaces; its words average
about 1.5 characters, so this puts Chinese and English turns on one scale).
"""
import json
import statistics
import sys
from pathlib import Path

MIN_TURNS, MAX_TURNS, MIN_WORDS = 2, 5, 6
LANGS = {"en", "zh", "mixed"}


def is_cjk(ch):
    cp = ord(ch)
    return 0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0xF900 <= cp <= 0xFAFF


def is_cjk_punct(ch):
    cp = ord(ch)
    return 0x3000 <= cp <= 0x303F or 0xFF00 <= cp <= 0xFFEF


def word_count(text):
    cjk = sum(1 for ch in text if is_cjk(ch))
    latin = "".join(" " if is_cjk(ch) or is_cjk_punct(ch) else ch for ch in text)
    words = sum(1 for tok in latin.split() if any(c.isalnum() for c in tok))
    return words + cjk / 1.5, cjk


def main():
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("conversations.jsonl")
    errors, ids, lengths, turns_per_conv = [], set(), [], []
    langs, chinese_turns = {}, 0
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            conv = json.loads(line)
        except json.JSONDecodeError as e:
            errors.append(f"line {lineno}: not JSON ({e})")
            continue
        cid, lang, turns = conv.get("id"), conv.get("lang"), conv.get("turns")
        if not isinstance(cid, str) or not cid or cid in ids:
            errors.append(f"line {lineno}: missing or duplicate id {cid!r}")
        ids.add(cid)
        if lang not in LANGS:
            errors.append(f"line {lineno}: lang {lang!r} not one of {sorted(LANGS)}")
        if not isinstance(turns, list) or not MIN_TURNS <= len(turns) <= MAX_TURNS:
            errors.append(f"line {lineno}: needs {MIN_TURNS}-{MAX_TURNS} turns")
            continue
        langs[lang] = langs.get(lang, 0) + 1
        turns_per_conv.append(len(turns))
        for i, turn in enumerate(turns):
            if not isinstance(turn, str):
                errors.append(f"line {lineno}: turn {i} is not a string")
                continue
            words, cjk = word_count(turn)
            if words < MIN_WORDS:
                errors.append(f"line {lineno}: turn {i} has {words:.1f} words (< {MIN_WORDS})")
            lengths.append(words)
            # A turn counts as Chinese when most of its words are Chinese.
            if cjk / 1.5 > words / 2:
                chinese_turns += 1

    if lengths:
        q = statistics.quantiles(lengths, n=20, method="inclusive")  # 5 % steps, type 7
        print(f"file: {path.name}")
        print(f"conversations: {len(turns_per_conv)} ({', '.join(f'{k} {v}' for k, v in sorted(langs.items()))})")
        print(f"turns: {len(lengths)} (per conversation: min {min(turns_per_conv)}, "
              f"median {statistics.median(turns_per_conv):g}, max {max(turns_per_conv)})")
        print("words per turn (CJK characters / 1.5 count as words):")
        print(f"  min {min(lengths):.0f}  p25 {q[4]:.0f}  median {statistics.median(lengths):.0f}  "
              f"p75 {q[14]:.0f}  p90 {q[17]:.0f}  max {max(lengths):.0f}  mean {statistics.mean(lengths):.0f}")
        print(f"  turns over 100 words: {sum(1 for x in lengths if x > 100)}, "
              f"over 200 words: {sum(1 for x in lengths if x > 200)}")
        print(f"Chinese turns: {chinese_turns} of {len(lengths)} ({100 * chinese_turns / len(lengths):.0f} %)")
    for e in errors:
        print("error:", e, file=sys.stderr)
    return 1 if errors or not lengths else 0


if __name__ == "__main__":
    sys.exit(main())
