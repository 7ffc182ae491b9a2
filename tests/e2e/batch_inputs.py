"""Deterministic OpenAI Batch inputs for the batch / slurm tests (token-id prompts, greedy)."""
import json
import random


def write_input(path, num_lines, seed, bad_lines=True):
    """Writes num_lines requests (plus a few bad lines) and returns the set of good custom_ids."""
    rng = random.Random(seed)
    ids = set()
    with open(path, "w") as f:
        for i in range(num_lines):
            prompt = [rng.randint(3, 500) for _ in range(rng.randint(3, 60))]
            body = {"prompt": prompt, "max_tokens": rng.randint(4, 48), "temperature": 0,
                    "ignore_eos": True}
            if i % 7 == 3:
                body["n"] = 2  # forks share the prompt's blocks
            f.write(json.dumps({"custom_id": f"req-{i}", "method": "POST",
                                "url": "/v1/completions", "body": body}) + "\n")
            ids.add(f"req-{i}")
            if bad_lines and i % 97 == 50:
                f.write("{not json\n")
                f.write(json.dumps({"custom_id": f"bad-{i}", "url": "/v1/completions",
                                    "body": {"prompt": [1, 2], "top_p": 7}}) + "\n")
    return ids


def load_records(path):
    """custom_id (or line number for error records) -> record without its timestamp; also the
    raw count of records per key, to find duplicates."""
    out, counts = {}, {}
    try:
        f = open(path)
    except FileNotFoundError:
        return out, counts
    with f:
        for raw in f:
            assert raw.endswith("\n"), f"{path}: torn line {raw!r}"
            rec = json.loads(raw)
            key = rec["line"] if "line" in rec else rec["custom_id"]
            body = (rec.get("response") or {}).get("body") or {}
            body.pop("created", None)
            out[key] = rec
            counts[key] = counts.get(key, 0) + 1
    return out, counts


def compare(ref_path, got_path):
    """Problems (strings) between a reference run's file and another run's."""
    ref, _ = load_records(ref_path)
    got, counts = load_records(got_path)
    problems = [f"{k}: written {c} times" for k, c in counts.items() if c != 1]
    problems += [f"{k}: missing" for k in ref if k not in got]
    problems += [f"{k}: unexpected" for k in got if k not in ref]
    problems += [f"{k}: differs" for k in ref if k in got and got[k] != ref[k]]
    return problems
