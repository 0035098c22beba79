/// @file safetensors.hpp
/// @brief Tensors in safetensors files (https://github.com/huggingface/safetensors), the format
/// `safetensors.torch.save_file` writes and `load_file` reads, with every file read treated as
/// untrusted input.
///
/// The format: 8 bytes, a little-endian u64 `N`; `N` bytes of UTF-8 JSON, one object
/// `{"<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
/// "__metadata__": {"<key>": "<string>", ...}}` (the metadata optional); then the data: each
/// tensor's elements little-endian in row-major order at bytes `[begin, end)` counted from the
/// data's start, the tensors one after another from 0 to the file's end, without gaps or
/// overlaps. The room `io/` includes `core/` only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/core/tensor_dict.hpp"

namespace attn::io {

/// A file's `__metadata__`: free-form strings by key (`{"format": "pt"}`).
using Metadata = std::map<std::string, std::string>;

/// The largest header a file may have: 100,000,000 bytes, the reference reader's
/// `MAX_HEADER_SIZE` (safetensors/src/tensor.rs).
inline constexpr std::uint64_t max_header_bytes = 100'000'000;
/// The most dimensions a tensor of a file may have (PyTorch's own limit is 64 too).
inline constexpr std::size_t max_file_rank = 64;

/// One tensor as a file's header describes it.
struct TensorInfo {
    std::string name;     ///< its key in the header
    std::string dtype;    ///< `"F32"`, `"F16"`, `"BF16"` or `"I64"`
    Shape shape;          ///< `[]` for a 0-d tensor
    std::uint64_t begin;  ///< `data_offsets[0]`: first byte, from the data's start
    std::uint64_t end;    ///< `data_offsets[1]`: one past the last byte
};

/// What a safetensors file holds.
struct SafetensorsFile {
    /// Its F32, F16 and BF16 tensors as float32, in the order of their data in the file. F16
    /// and BF16 convert exactly (every value of both is a float32: NaN payloads, infinities,
    /// signed zeros and F16's subnormals included), bit for bit as PyTorch's `tensor.float()`
    /// converts them (which also quiets an F16 signalling NaN, and keeps a BF16 one).
    TensorDict tensors;
    /// Its I64 tensors (`torch.int64`), by name.
    std::map<std::string, LongTensor> int64_tensors;
    /// Every tensor's header entry, in the order of its data (its file dtype is there).
    std::vector<TensorInfo> infos;
    /// The `__metadata__` (empty when the file has none).
    Metadata metadata;
};

/// The bytes of a safetensors file holding `tensors` as F32 (what `serialize` in
/// safetensors/src/tensor.rs, behind `safetensors.torch.save_file`, writes for float32
/// tensors): the header is compact JSON (serde_json's: no spaces, `"__metadata__"` first when
/// `metadata` is not empty, its keys sorted, then each tensor as `{"dtype":"F32","shape":[..],
/// "data_offsets":[b,e]}`), padded with spaces to a multiple of 8 bytes so that the data
/// starts aligned; the tensors ordered by dtype alignment then name (for float32 alone: by
/// name, byte by byte), each one's data after the previous one's. The same tensors give the
/// same bytes as `save_file` (the reference orders the metadata's keys as a hash map does;
/// here they are sorted).
/// @throws std::invalid_argument `"serialize_safetensors: <name>: ..."` when a name is
/// `"__metadata__"` or not valid UTF-8, or a metadata key or value is not valid UTF-8;
/// std::length_error when the header would exceed `max_header_bytes` (no reader would accept
/// it) or a tensor's shape does not match its storage.
std::string serialize_safetensors(const TensorDict& tensors, const Metadata& metadata = {});

/// Writes `serialize_safetensors(tensors, metadata)` to `file` without holding it in memory:
/// into a temporary file beside it (`<file>.tmp.<pid>.<n>`), flushed to the disk (`fsync`), then
/// renamed over `file`, so that a failed write leaves no half file and `file`, if it existed,
/// untouched.
/// @throws std::invalid_argument as `serialize_safetensors` (nothing is written then);
/// std::runtime_error `"<file>: cannot be written (<reason>)"` when the temporary file cannot
/// be created or written, or the rename fails (e.g. `file` is a directory).
void save_safetensors(const std::filesystem::path& file, const TensorDict& tensors, const Metadata& metadata = {});

/// Reads a safetensors file, checking it whole before it allocates anything its header sizes:
/// the header's length against the file's size and `max_header_bytes`, the header (valid
/// UTF-8 JSON starting with `{`, one object, no key twice at any level, each entry exactly
/// `dtype`, `shape` and `data_offsets`), each tensor (a non-empty name, a dtype read here,
/// a shape of at most `max_file_rank` non-negative integers whose byte count does not overflow
/// and equals its range), and the layout: sorted by offset (the header's order is free, as in
/// the reference), the ranges tile the data from its first byte to the file's last. Then each
/// tensor is read straight into its storage. The header's order of keys does not matter.
/// @throws std::runtime_error `"<file>: <reason>"` or `"<file>: <tensor name>: <reason>"` (the
/// name with control characters escaped, at most 200 bytes shown) when the file cannot be read
/// (missing, not a regular file: a directory or a FIFO is refused unopened), is shorter than 8
/// bytes, its header length exceeds `max_header_bytes` or runs past the file's end, the
/// header is not valid JSON (naming the byte), not an object, repeats a key, holds a
/// `__metadata__` that is not an object of strings, an entry that is not an object or lacks
/// or adds a field, an empty name, an unknown dtype (`unknown dtype "Q8"`) or one not read
/// here (`dtype "F64" is not supported (this library reads F32, F16, BF16 and I64)`), a shape
/// that is not a list of non-negative integers, too many dimensions, an element or byte count
/// that overflows, `data_offsets` not two non-negative integers, ending before they begin,
/// whose length is not the shape's bytes, that run past the end of the data, overlap the
/// previous tensor's or leave a gap; when bytes after the last tensor belong to none; or when a
/// read fails. std::length_error as `check_allocation` when a tensor is too large for this
/// machine.
SafetensorsFile load_safetensors(const std::filesystem::path& file);

/// `load_safetensors` of a file's bytes held in memory; `name` stands for the file in messages.
/// @throws std::runtime_error as `load_safetensors`.
SafetensorsFile parse_safetensors(std::string_view bytes, const std::string& name = "<bytes>");

}  // namespace attn::io
