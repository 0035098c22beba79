#!/usr/bin/python3
"""The `generate` program (chapters/generate.cpp) as a reader runs it.

    tests/check_generate.py GENERATE DATA_DIR     (meson test: test_generate)

- `--help` documents every flag; a bad flag, a missing `--prompt`, a negative or NaN temperature
  and a top-k of 0 print the usage and exit 2;
- without `--weights`, in a directory without chapter 26's model, it says how to get weights and
  exits 1;
- on the small GPT-2 in Hugging Face's layout written by tools/oracle/gpt2_hf_files.py
  (data/oracle/gpt2_hf/, its config.json beside it), it prints the text of the ids Debian's
  PyTorch 1.13 generated from the same file with his `generate` after `torch.manual_seed(123)`
  (gpt2_hf.json's "generate"), decoded with GPT-2's encoder.json (data/gpt2/) as tiktoken does;
- a top-k beyond that model's vocabulary, a truncated file, a file missing a tensor: a one-line
  error naming what is wrong, exit 1.
Standard library only.
"""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

FAILURES = []


def check(ok, message):
    if not ok:
        FAILURES.append(message)
        print("FAIL:", message)


def run(exe, *args, cwd=None):
    return subprocess.run([exe, *args], capture_output=True, text=True, cwd=cwd)


def gpt2_decode(ids, encoder_file):
    """GPT-2's decode (OpenAI's encoder.py): tokens by id, then the byte-level alphabet back to bytes."""
    decoder = {v: k for k, v in json.loads(Path(encoder_file).read_text(encoding="utf-8")).items()}
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    byte_of = {chr(c): b for b, c in zip(bs, cs)}
    return bytes(byte_of[ch] for i in ids for ch in decoder[i]).decode("utf-8", errors="replace")


def main():
    exe, data = os.path.abspath(sys.argv[1]), Path(sys.argv[2])
    hf = data / "oracle" / "gpt2_hf"
    helped = run(exe, "--help")
    check(helped.returncode == 0, f"--help exits {helped.returncode}")
    for flag in ["--weights", "--config", "--prompt", "--max-new-tokens", "--temperature", "--top-k", "--seed", "--threads"]:
        check(flag in helped.stdout, f"--help does not document {flag}")

    for args, says in [(["--bogus"], "bogus"), ([], "--prompt is required"),
                       (["--prompt", "x", "--temperature", "-1"], "--temperature"),
                       (["--prompt", "x", "--temperature", "nan"], "--temperature"),
                       (["--prompt", "x", "--top-k", "0"], "--top-k"), (["--prompt", "x", "--top-k", "3x"], "--top-k"),
                       (["--prompt", "x", "--threads", "0"], "--threads")]:
        p = run(exe, *args)
        check(p.returncode == 2, f"generate {' '.join(args)}: exit {p.returncode}, not 2")
        check(says in p.stderr and "Usage" in p.stderr, f"generate {' '.join(args)}: stderr lacks {says!r} or the usage: {p.stderr[:300]!r}")

    with tempfile.TemporaryDirectory() as tmp:
        p = run(exe, "--prompt", "Every effort moves you", cwd=tmp)
        check(p.returncode == 1, f"no weights: exit {p.returncode}, not 1")
        check("chapter_26_pretraining" in p.stderr and "huggingface.co/openai-community/gpt2" in p.stderr,
              f"no weights: the message does not say how to get them: {p.stderr!r}")

        oracle = json.loads((hf / "gpt2_hf.json").read_text(encoding="utf-8"))["generate"]
        prompt = gpt2_decode(oracle["prompt"], data / "gpt2" / "encoder.json")
        p = run(exe, "--weights", str(hf / "model.safetensors"), "--prompt", prompt,
                "--max-new-tokens", str(oracle["max_new_tokens"]), "--top-k", str(oracle["top_k"]),
                "--temperature", str(oracle["temperature"]), "--seed", "123", "--threads", "1")
        expected = "Output text:\n " + gpt2_decode(oracle["ids"], data / "gpt2" / "encoder.json") + "\n"
        check(p.returncode == 0 and p.stdout == expected,
              f"the oracle's file: exit {p.returncode}, printed {p.stdout!r}, PyTorch's ids give {expected!r}; {p.stderr!r}")

        p = run(exe, "--weights", str(hf / "model.safetensors"), "--prompt", prompt, "--top-k", "51")
        check(p.returncode == 1 and "top_k" in p.stderr and p.stderr.count("\n") == 1,
              f"top-k 51 on a vocabulary of 50: exit {p.returncode}, {p.stderr!r}")

        whole = (hf / "model.safetensors").read_bytes()
        cut = Path(tmp) / "cut.safetensors"
        cut.write_bytes(whole[: len(whole) // 2])
        p = run(exe, "--weights", str(cut), "--config", str(hf / "config.json"), "--prompt", prompt)
        check(p.returncode == 1 and str(cut) in p.stderr, f"a truncated file: exit {p.returncode}, {p.stderr!r}")

        header_len = int.from_bytes(whole[:8], "little")
        header = json.loads(whole[8:8 + header_len])
        name = "h.1.mlp.c_fc.bias"
        begin, end = header[name]["data_offsets"]
        del header[name]
        for entry in header.values():  # the data after the dropped tensor moves up
            if isinstance(entry, dict) and "data_offsets" in entry and entry["data_offsets"][0] >= end:
                entry["data_offsets"] = [o - (end - begin) for o in entry["data_offsets"]]
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * (-len(text) % 8)
        data_part = whole[8 + header_len:]
        missing = Path(tmp) / "missing.safetensors"
        missing.write_bytes(len(text).to_bytes(8, "little") + text + data_part[:begin] + data_part[end:])
        p = run(exe, "--weights", str(missing), "--config", str(hf / "config.json"), "--prompt", prompt)
        check(p.returncode == 1 and name in p.stderr, f"a file without {name}: exit {p.returncode}, {p.stderr!r}")

    print(f"check_generate: {len(FAILURES)} failure(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
