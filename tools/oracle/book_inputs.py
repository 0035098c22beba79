"""The book's input, written once for every oracle script: the six 3-d token embeddings of
"Your journey starts with one step" (Raschka ch. 3.3.1, In [2] of
data/sources/raschka/raschka_ch03.txt; notebooks 002 and 004), and the batch of two copies
that ch. 3.5.3 builds from them.

`INPUTS_CODE` is the line the text exports' first cell runs; `INPUTS` is the tensor that very
line makes, so a case and a printed cell start from the same values."""
import torch

INPUTS_CODE = ("inputs = torch.tensor([[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64], "
               "[0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]])")
BATCH_CODE = "batch = torch.stack((inputs, inputs))"
BATCH_DIM0_CODE = "batch = torch.stack((inputs, inputs), dim=0)"  # as ch. 3.5.3 writes it

_namespace = {"torch": torch}
exec(INPUTS_CODE, _namespace)
INPUTS = _namespace["inputs"]            # [6, 3] float32
BATCH = torch.stack((INPUTS, INPUTS))    # [2, 6, 3]; callers that set requires_grad take a clone


def setup_cell(import_line, batch_code=BATCH_CODE):
    """A text export's first cell: import torch, the module under test (`import_line`), the
    inputs and the batch."""
    return "\n".join(("import torch", import_line, INPUTS_CODE, batch_code))
