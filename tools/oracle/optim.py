#!/usr/bin/python3
"""Records 50 steps of torch.optim.SGD and torch.optim.AdamW on random parameters (tests/test_optim.cpp).

Run with Debian's interpreter (python3-torch 1.13.1):

    /usr/bin/python3 tools/oracle/optim.py [--out data/oracle/optim.json]

Each case builds four float32 parameters in `named_parameters()` order from `manual_seed(seed)`
(uniform in [-1, 1)), an optimizer over them, and runs 50 steps; before step k every parameter
is given the gradient `randn(shape, generator=g) * 10 ** (k % 5 - 2)` (g seeded with seed + 1),
except the parameter `late`, whose `.grad` stays None for the first 10 steps (the optimizers
skip it and create its state at its first gradient). The file holds, as float32 bit patterns
(uint32, row-major): every parameter's initial value, every gradient given, and every
parameter after each step. 1.13's optimizers take their single-tensor (for-loop) path by
default (foreach=None means False on the CPU), whose float operations the library follows.
"""

import argparse
import json
import os
import sys

import numpy as np
import torch
from oracle_common import provenance

SCRIPT = "tools/oracle/optim.py"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STEPS = 50
LATE_NAME, LATE_FROM = "late", 10
SHAPES = [("W.weight", (6, 3)), ("W.bias", (6,)), ("out.weight", (5, 7)), (LATE_NAME, (3,))]

CASES = [
    ("sgd_plain", "SGD(params, lr=0.1)", lambda p: torch.optim.SGD(p, lr=0.1)),
    ("sgd_momentum", "SGD(params, lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01)",
     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("sgd_nesterov", "SGD(params, lr=0.05, momentum=0.8, weight_decay=0.001, nesterov=True)",
     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, weight_decay=0.001, nesterov=True)),
    ("adamw_default", "AdamW(params)", lambda p: torch.optim.AdamW(p)),
    ("adamw_custom", "AdamW(params, lr=0.01, betas=(0.8, 0.99), eps=1e-06, weight_decay=0.1)",
     lambda p: torch.optim.AdamW(p, lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("adamw_no_decay", "AdamW(params, lr=0.1, weight_decay=0.0)",
     lambda p: torch.optim.AdamW(p, lr=0.1, weight_decay=0.0)),
]


def bits(t):
    return t.detach().contiguous().numpy().view(np.uint32).ravel().tolist()


def run_case(seed, make):
    torch.manual_seed(seed)
    params = [torch.nn.Parameter(torch.rand(shape) * 2 - 1) for _, shape in SHAPES]
    g = torch.Generator().manual_seed(seed + 1)
    opt = make(params)
    initial = {name: bits(p) for (name, _), p in zip(SHAPES, params)}
    steps = []
    for k in range(STEPS):
        opt.zero_grad()
        grads = {}
        for (name, shape), p in zip(SHAPES, params):
            grad = torch.randn(shape, generator=g) * 10.0 ** (k % 5 - 2)
            if name == LATE_NAME and k < LATE_FROM:
                p.grad = None
                grads[name] = None
            else:
                p.grad = grad
                grads[name] = bits(grad)
        opt.step()
        steps.append({"grads": grads, "params": {name: bits(p) for (name, _), p in zip(SHAPES, params)}})
    return {"repr": repr(opt), "initial": initial, "steps": steps}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "data", "oracle", "optim.json"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    cases = []
    for i, (name, python, make) in enumerate(CASES):
        seed = 100 + i
        cases.append({"name": name, "python": python, "seed": seed, **run_case(seed, make)})
    doc = provenance(
        SCRIPT, blas=False, command="/usr/bin/python3 " + SCRIPT,
        numpy_version=np.__version__,
        format="Each case: `python` is the optimizer built over the four parameters `parameters` "
                  "lists (name, shape, in named_parameters() order); `initial` maps a name to its "
                  "float32 bits (uint32, row-major); `steps[k]` holds the gradients given before "
                  "step k (null: .grad is None) and every parameter after step k, as bits.",
        parameters=[{"name": n, "shape": list(s)} for n, s in SHAPES],
        steps=STEPS,
        cases=cases)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        # One case a line keeps the file readable and small.
        head = {k: v for k, v in doc.items() if k != "cases"}
        text = json.dumps(head, indent=1)[:-2]
        f.write(text + ',\n "cases": [\n')
        f.write(",\n".join("  " + json.dumps(c, separators=(",", ":")) for c in cases))
        f.write("\n ]\n}\n")
    json.load(open(args.out, encoding="utf-8"))
    print(f"wrote {args.out}: {len(cases)} cases of {STEPS} steps")


if __name__ == "__main__":
    sys.exit(main())
