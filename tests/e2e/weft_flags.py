"""Checks the flags of `weft COMMAND ...` command lines found in recipes and docs against what
`weft COMMAND --help` lists (one table per command drives both weft's parser and its help, so
the help is the parser's own list)."""
import re
import subprocess

_known = {}


def known_flags(weft, command):
    """The flags `weft command --help` lists, or None when that fails."""
    if (weft, command) not in _known:
        helped = subprocess.run([weft, command, "--help"], capture_output=True, text=True)
        flags = set(re.findall(r"^\s+(--[a-z0-9-]+)", helped.stdout + helped.stderr, re.M))
        _known[(weft, command)] = flags if helped.returncode == 0 and flags else None
    return _known[(weft, command)]


def unknown_flags(weft, words):
    """Errors for each `weft COMMAND` in the word list `words` (a shell command split into
    words) that gets a --flag its help does not list, or whose help fails."""
    errors = []
    for i, w in enumerate(words[:-1]):
        if w != "weft" or words[i + 1].startswith("-"):
            continue
        command = words[i + 1]
        known = known_flags(weft, command)
        if known is None:
            errors.append(f"weft {command} --help failed")
            continue
        errors += [f"weft {command} has no flag {flag}" for flag in words[i + 2:]
                   if flag.startswith("--") and flag not in known]
    return errors
