/// @file state_dict.hpp
/// @brief Keeping weights: `module.state_dict()` and `module.load_state_dict(sd, strict)` as
/// PyTorch 1.13 defines them (torch/nn/modules/module.py), and the optimizer's own
/// (`optimizer.state_dict()` / `load_state_dict`, torch/optim/optimizer.py) for AdamW.
///
/// A state dict is a `TensorDict` (core/tensor_dict.hpp): copies of the tensors, by dotted name.
/// Files are another room's business: io/safetensors.hpp writes and reads a `TensorDict`, so a
/// model is kept as
/// ```
/// io::save_safetensors("model.safetensors", nn::state_dict(model));
/// nn::load_state_dict(model, io::load_safetensors("model.safetensors").tensors);
/// ```
/// and read in PyTorch by `model.load_state_dict(safetensors.torch.load_file(path))`.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "attn/core/tensor_dict.hpp"
#include "attn/nn/module.hpp"
#include "attn/nn/optim.hpp"

namespace attn::nn {

/// `module.state_dict()`: a copy of every parameter and persistent buffer, float32, by dotted
/// name, in PyTorch's order: for each module (depth first, children in registration order) its
/// own parameters, then its own persistent buffers, then its children's entries. For Raschka's
/// `GPTModel` that is `tok_emb.weight`, `pos_emb.weight`, then per block
/// `trf_blocks.N.att.mask` (the `[context_length, context_length]` causal mask he registers as
/// a persistent buffer, so PyTorch's `state_dict()` holds it and a strict `load_state_dict`
/// requires it), `trf_blocks.N.att.W_query.weight`, ..., `final_norm.scale`,
/// `final_norm.shift`, `out_head.weight`: the keys and order of his model's `state_dict()`, so
/// `model.load_state_dict(load_file(path))` loads a file written from it into his PyTorch
/// class as it is. The position tables of RoPE (`MultiHeadAttention::positions`) are not
/// buffers here and are not saved.
/// Source: `nn.Module.state_dict` / `_save_to_state_dict`, PyTorch 1.13.
TensorDict state_dict(Module& module);

/// What `load_state_dict` did not match (`_IncompatibleKeys`): the module's keys absent from
/// the dictionary, and the dictionary's keys the module does not have.
struct IncompatibleKeys {
    std::vector<std::string> missing_keys;     ///< in the module's `state_dict` order
    std::vector<std::string> unexpected_keys;  ///< in PyTorch's order (by module, then as given)
};

/// `module.load_state_dict(state_dict, strict)`: copies each entry into the parameter or
/// persistent buffer of that name. Keys are matched as PyTorch 1.13 matches them: a key is
/// unexpected when, below the module its prefix names, the next part is neither a child, a
/// parameter nor a buffer (so a key naming a module itself, such as `"trf_blocks.0"`, is
/// neither loaded nor reported, as in PyTorch). Every entry is float32 (a file's F16 and BF16
/// tensors were converted exactly on reading, as PyTorch's `param.copy_` converts them).
///
/// Unlike PyTorch, which copies every matching entry before it raises, everything is checked
/// first: when anything is refused, nothing in the module has changed.
/// Returns the missing and unexpected keys (both empty when `strict`).
/// @throws std::runtime_error (PyTorch's RuntimeError) with PyTorch's messages on one line,
/// when `strict` and a key is missing or unexpected, or (strict or not) when an entry's shape
/// is not its parameter's or buffer's:
/// ```
/// Error(s) in loading state_dict for GPTModel: Missing key(s) in state_dict: "a", "b".
/// Unexpected key(s) in state_dict: "c". size mismatch for out_head.weight: copying a param
/// with shape torch.Size([10, 4]) from checkpoint, the shape in current model is torch.Size([11, 4]).
/// ```
/// (one line in the message; keys with control characters escaped).
/// @throws std::length_error as `shape_of` for a tensor whose shape does not match its storage.
/// Source: `nn.Module.load_state_dict` / `_load_from_state_dict`, PyTorch 1.13 (its 0.3-era
/// rule that loads a `[1]` entry into a 0-d parameter is not kept: no module here has one).
IncompatibleKeys load_state_dict(Module& module, const TensorDict& state_dict, bool strict = true);

}  // namespace attn::nn

namespace attn::optim {

/// `AdamW.state_dict()` in a form a safetensors file can hold: tensors and string metadata.
///
/// `state` holds, for each parameter that has a state (one that has had a gradient at a
/// `step()`, as `optimizer.state` holds only those), in `parameters()` order:
/// - `state.<param name>.step`: a 0-d float32 tensor, the step count (PyTorch 1.13 keeps
///   `state['step']` as a float32 tensor: exact up to 2^24 steps);
/// - `state.<param name>.exp_avg`, `state.<param name>.exp_avg_sq`: float32, the parameter's
///   shape.
/// PyTorch's own `state_dict()` keys the state by the parameter's index in the group
/// (`state[i]`); the index of `<param name>` is its place in `model.named_parameters()`.
///
/// `param_groups` holds the hyperparameters as Python prints them (`repr` of a float): `"lr"`,
/// `"beta1"`, `"beta2"` (PyTorch's `betas`), `"eps"`, `"weight_decay"`, `"amsgrad"` and
/// `"maximize"` (`"False"`: neither is offered), and `"optimizer": "AdamW"`.
struct AdamWStateDict {
    TensorDict state;                                 ///< the per-parameter state (above)
    std::map<std::string, std::string> param_groups;  ///< the hyperparameters (above)
};

/// `optimizer.state_dict()` of an AdamW (see `AdamWStateDict`): copies.
/// @throws std::invalid_argument when a step exceeds 2^24, beyond which a float32 step
/// (PyTorch 1.13's) is no longer exact.
AdamWStateDict state_dict(const AdamW& optimizer);

/// `optimizer.load_state_dict(state_dict)` for an AdamW: the state of each parameter from
/// `state` (a parameter with no `state.<name>.*` entry gets no state, as in PyTorch), and the
/// hyperparameters named in `param_groups` (those absent keep their value; other keys, such as
/// a file's `"format"`, are ignored). The next `step()` continues bit for bit as the optimizer
/// that was saved would have.
/// Everything is checked before anything changes; when anything is refused the optimizer is
/// as it was.
/// @throws std::invalid_argument naming the key when an entry of `state` is not
/// `state.<a parameter's name>.{step,exp_avg,exp_avg_sq}`, a parameter has some of its three
/// entries but not all, a step is not a 0-d tensor holding a whole number in [1, 2^24], an
/// `exp_avg` or `exp_avg_sq` does not have its parameter's shape; when `param_groups` says
/// another optimizer (`"optimizer"` not `"AdamW"`), `"amsgrad"` or `"maximize"` other than
/// `"False"`, a hyperparameter that is not a number, or values `AdamWOptions::validate`
/// refuses.
void load_state_dict(AdamW& optimizer, const TensorDict& state,
                     const std::map<std::string, std::string>& param_groups = {});

}  // namespace attn::optim
