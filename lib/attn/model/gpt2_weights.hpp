/// @file gpt2_weights.hpp
/// @brief OpenAI's GPT-2 weights in Raschka's `GPTModel`, from Hugging Face's safetensors files
/// (*Build a Large Language Model (From Scratch)*, ch. 5.5, through his notebook
/// ch05/02_alternative_weight_loading/weight-loading-hf-safetensors.ipynb: In [4] the configs,
/// In [6] `assign`, In [7] `load_weights_into_gpt`).
///
/// Hugging Face's `openai-community/gpt2*` `model.safetensors` hold `GPT2Model`'s state dict
/// (keys without a prefix, metadata `{"format": "pt"}`), float32:
/// ```
/// wte.weight [V, E]                 wpe.weight [C, E]
/// h.N.ln_1.weight [E]               h.N.ln_1.bias [E]
/// h.N.attn.bias [1, 1, C, C]        (the causal mask as a buffer: lower-triangular ones)
/// h.N.attn.c_attn.weight [E, 3E]    h.N.attn.c_attn.bias [3E]
/// h.N.attn.c_proj.weight [E, E]     h.N.attn.c_proj.bias [E]
/// h.N.ln_2.weight [E]               h.N.ln_2.bias [E]
/// h.N.mlp.c_fc.weight [E, 4E]       h.N.mlp.c_fc.bias [4E]
/// h.N.mlp.c_proj.weight [4E, E]     h.N.mlp.c_proj.bias [E]
/// ln_f.weight [E]                   ln_f.bias [E]
/// ```
/// GPT-2's `Conv1D` stores its weight as `[in, out]` (`x @ W + b`), `nn.Linear` as `[out, in]`
/// (`x @ W.T + b`): hence his transposes. The output head is tied to `wte` (no `lm_head` of
/// its own). A file is read with `io::load_safetensors` (F16 and BF16 converted to float32
/// exactly), then:
/// ```
/// GPTModel gpt(gpt2_config_from_json("config.json"));   // or gpt2_config("gpt2-small (124M)")
/// load_weights_into_gpt(gpt, io::load_safetensors("model.safetensors").tensors);
/// gpt.eval();
/// ```
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "attn/core/tensor_dict.hpp"
#include "attn/model/config.hpp"
#include "attn/model/gpt_model.hpp"

namespace attn {

/// His In [4]: `BASE_CONFIG` (`vocab_size` 50257, `context_length` 1024, `drop_rate` 0.0,
/// `qkv_bias` True) updated with `model_configs[model_name]`: `"gpt2-small (124M)"` (emb_dim
/// 768, n_layers 12, n_heads 12), `"gpt2-medium (355M)"` (1024, 24, 16), `"gpt2-large (774M)"`
/// (1280, 36, 20), `"gpt2-xl (1558M)"` (1600, 48, 25). (Chapter 4's `get_config`, config.hpp,
/// takes the short names and keeps the base's dropout and bias.)
/// @throws std::invalid_argument `"gpt2_config: unknown model name \"x\"; expected one of
/// \"gpt2-small (124M)\", ..."` for any other name.
GPTConfig gpt2_config(std::string_view model_name);

/// The config of Hugging Face's GPT-2 `config.json` (`GPT2Config.to_json_string`): `n_embd`
/// -> emb_dim, `n_head` -> n_heads, `n_layer` -> n_layers, `n_positions` -> context_length,
/// `vocab_size`; with `qkv_bias` true (GPT-2's `c_attn` has a bias) and `drop_rate` 0 (his In
/// [4], for inference). Every other field (`n_inner`, `activation_function`, dropouts,
/// `layer_norm_epsilon`, ...) is ignored: his model has GPT-2's fixed ones, and a file whose
/// `n_inner` is not `4 * n_embd` is refused by `load_weights_into_gpt`'s shapes.
/// The file is untrusted input: it is read only when a regular file of at most 1 MB (a real one
/// is under 1 kB), and every field is checked before anything is allocated.
/// @throws std::runtime_error `"<file>: <reason>"` when the file cannot be read, is larger than
/// 1 MB, is not valid JSON or not an object; `"<file>: \"n_head\": <reason>"` when a field is
/// missing, not an integer (`768.0`, `"768"`, `null`), not in [1, 2^31 - 1]; when `n_embd` is
/// not divisible by `n_head`; or when the model would be too large for this machine
/// (`GPTConfig::check`'s message after the file's name).
GPTConfig gpt2_config_from_json(const std::filesystem::path& file);

/// `gpt2_config_from_json` of a `config.json`'s text held in memory; `name` stands for the file
/// in messages.
/// @throws std::runtime_error as `gpt2_config_from_json` (except the reading).
GPTConfig parse_gpt2_config(std::string_view json_text, const std::string& name = "<config.json>");

/// His In [7] `load_weights_into_gpt(gpt, params)`: Hugging Face's GPT-2 tensors (float32, the
/// layout of this file's header) into `gpt`, which must be built with `qkv_bias` true:
/// - `wpe.weight [C, E]` -> `pos_emb.weight`; `wte.weight [V, E]` -> `tok_emb.weight` and
///   `out_head.weight` (tied, as GPT-2);
/// - per block N: `h.N.attn.c_attn.weight [E, 3E]` chunked in 3 along the last dimension, each
///   `[E, E]` transposed -> `att.W_query.weight`, `att.W_key.weight`, `att.W_value.weight`;
///   `h.N.attn.c_attn.bias [3E]` chunked -> their biases; `h.N.attn.c_proj.weight`ᵀ ->
///   `att.out_proj.weight` (+ `.bias`); `h.N.mlp.c_fc.weight [E, 4E]`ᵀ -> `ff.layers.0.weight`
///   (+ `.bias`); `h.N.mlp.c_proj.weight [4E, E]`ᵀ -> `ff.layers.2.weight` (+ `.bias`);
///   `h.N.ln_1.weight`/`.bias` -> `norm1.scale`/`.shift`, `h.N.ln_2` -> `norm2`;
/// - `ln_f.weight`/`.bias` -> `final_norm.scale`/`.shift`.
/// Skipped, as his loader never reads them: each block's causal-mask buffer `h.N.attn.bias`
/// (real files hold it, `[1, 1, C, C]`) and older files' `h.N.attn.masked_bias`, for N a block
/// of the model. Keys may also all carry `GPT2LMHeadModel`'s prefix `transformer.`; such a file
/// may hold `lm_head.weight`, accepted when it equals `wte.weight` bit for bit (tied) and
/// refused otherwise, since his model ties the head. Every other key is an error, as is a key
/// missing: unlike his loader (which ignores extra keys), a file of another model or size is
/// caught by name.
/// Everything is checked before anything changes (his loader assigns as it goes): the tensors
/// are then converted into a state dict and given to `nn::load_state_dict` (the masks of
/// `gpt` stay its own), so that after an exception `gpt` is as it was.
/// The weights are held contiguously, as in a model loaded by `load_state_dict`: its logits are
/// PyTorch's bit for bit (tests/test_gpt2_weights.cpp). His `assign` keeps `q_w.T` etc. as
/// transposed views, for which PyTorch 1.13's `addmm(bias, x, W.t())` takes the reference BLAS's
/// other loop, which adds the bias before the products instead of after: his model as his loader
/// leaves it computes logits a few ulps away (data/oracle/gpt2_hf/ records both).
/// While loading, the converted weights are held once more beside the model and `params`.
/// @throws std::invalid_argument `"load_weights_into_gpt: ..."` (his `assign`'s ValueError,
/// Python's KeyError) when the model has no query/key/value biases; when keys mix the
/// `transformer.` prefix with bare ones; naming every unexpected key (`unexpected key(s):
/// "h.2.ln_1.weight"`) and every missing key (`missing key(s): "ln_f.bias"`); when a tensor's
/// shape is not the model's (`h.0.attn.c_attn.weight: Shape mismatch. expected [8, 24], got
/// [8, 23]`, the expected shape in the file's layout: `[in, out]` for Conv1D weights); when
/// `lm_head.weight` differs from `wte.weight`. std::length_error as `shape_of` for a tensor whose
/// shape does not match its storage.
void load_weights_into_gpt(GPTModel& gpt, const TensorDict& params);

/// A GPT model read from a safetensors file, as Raschka's `gpt_generate.py` and the `generate`
/// program need it: the file's layout is recognised by its keys, the configuration found, the
/// model built and loaded.
/// - Hugging Face's GPT-2 layout (`wte.weight` or `transformer.wte.weight`): the configuration
///   from `config` when given, else from `config.json` beside `weights` when there is one
///   (`gpt2_config_from_json`), else from the tensors (vocabulary and width from `wte`, context
///   from `wpe`, blocks counted, heads by width as his `model_configs`: 768 -> 12, 1024 -> 16,
///   1280 -> 20, 1600 -> 25); then `load_weights_into_gpt`.
/// - A `GPTModel`'s `state_dict` (`tok_emb.weight`: his PyTorch class's, or this library's, such
///   as chapter 26's `gpt2_the_verdict.safetensors`): the configuration from the tensors (as
///   above, `qkv_bias` when `trf_blocks.0.att.W_query.bias` is there, `drop_rate` 0); then
///   `nn::load_state_dict`.
/// Tensors: F32, F16 or BF16, read as float32. The model is returned in training mode, as built.
/// @throws std::runtime_error `"<weights>: <reason>"` when the file cannot be read or is not
/// safetensors (`io::load_safetensors`), is of neither layout, lacks `wte`/`wpe` (`tok_emb`/
/// `pos_emb`) or holds them other than 2-D, or has a width that is none of GPT-2's without a
/// config; as `gpt2_config_from_json` for the config; std::invalid_argument as
/// `load_weights_into_gpt` and `nn::load_state_dict` (a key missing or unexpected, a shape).
/// Source: Raschka's ch05/01_main-chapter-code/gpt_generate.py (`main`: model_configs, the model
/// built, load_weights_into_gpt), with Hugging Face's files in place of OpenAI's TensorFlow ones.
GPTModel load_gpt_safetensors(const std::filesystem::path& weights, const std::filesystem::path& config = {});

}  // namespace attn
