"""Extracts the King James Bible (Debian package bible-kjv-text, public domain) as plain text.

Writes train.txt and heldout.txt into OUT_DIR: one verse per line, a blank line between chapters.
Every 25th chapter (chapter index % 25 == 12, counted over the whole Bible) is held out, so the
held-out text spans every book's style without sharing a verse with the training text.

  python3 prepare_text.py OUT_DIR
Needs the `bible` program (Debian package bible-kjv); install it with
  apt-get install -y bible-kjv
"""
import os
import re
import subprocess
import sys

HELDOUT_EVERY = 25
HELDOUT_PHASE = 12


def chapters(raw):
    """Yields (title, [verse, ...]) from the output of `bible gen1:1-rev22:21`."""
    title, verses = None, []
    for line in raw.splitlines():
        if not line.strip():
            continue
        header = re.fullmatch(r"(\S.*\S) (\d+)", line)
        verse = re.match(r"\s+(\d+) (.*)", line)
        if header and not line.startswith(" "):
            if title is not None:
                yield title, verses
            title, verses = line, []
        elif verse:
            verses.append(verse.group(2).strip())
        else:  # a verse continued on the next line
            verses[-1] += " " + line.strip()
    if title is not None:
        yield title, verses


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    raw = subprocess.run(["bible", "-l10000", "gen1:1-rev22:21"], check=True, capture_output=True,
                         text=True).stdout
    train, heldout = [], []
    for index, (_, verses) in enumerate(chapters(raw)):
        (heldout if index % HELDOUT_EVERY == HELDOUT_PHASE else train).append("\n".join(verses))
    for name, parts in [("train.txt", train), ("heldout.txt", heldout)]:
        with open(os.path.join(out_dir, name), "w") as f:
            f.write("\n\n".join(parts) + "\n")
    print("chapters: %d train, %d held out" % (len(train), len(heldout)))


if __name__ == "__main__":
    main()
