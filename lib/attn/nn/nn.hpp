/// @file nn.hpp
/// @brief Modules that hold weights, as in `torch.nn`: `Linear` and `Parameter(rand(...))`.
///
/// Construction draws from the generator in exactly PyTorch's order, so a module built after
/// `manual_seed(s)` holds the same numbers as its PyTorch twin.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "attn/core/generator.hpp"
#include "attn/core/tensor.hpp"
#include "attn/kernels/arithmetic.hpp"
#include "attn/nn/module.hpp"

namespace attn::nn {

/// Which of PyTorch's CPU Bernoulli implementations draws dropout masks
/// (`bernoulli_scalar_kernel` in aten/src/ATen/native/cpu/DistributionKernels.cpp).
enum class BernoulliBackend {
    portable,  ///< `bernoulli_scalar_kernel_default`: one 64-bit draw per element
    mkl,       ///< MKL VSL MCG31m1 stream seeded by one 32-bit draw (Intel x86 wheels)
};

/// Checks that `backend` is one of the enumerators (a value cast from an integer outside the
/// enum must never draw as the other backend).
/// @throws std::invalid_argument `"<where>: unknown Bernoulli backend 7 (expected
/// BernoulliBackend::portable (0) or mkl (1))"` otherwise.
void check_backend(BernoulliBackend backend, const char* where);

/// The backend's name as the chapters print it: `"MKL"` or `"portable"`.
/// @throws std::invalid_argument as `check_backend` for a value outside the enum.
std::string backend_name(BernoulliBackend backend);

// NamedParameter, zero_grad and the Module base: attn/nn/module.hpp.

/// Adds `g` into the gradient `grad` as PyTorch's `AccumulateGrad` does: an empty `grad`
/// becomes `g` itself, an existing one becomes `grad + g` (one float32 addition per element).
/// `what` names the parameter in the message.
/// @throws std::invalid_argument when an existing `grad` does not have `g`'s shape (a
/// parameter replaced by one of another shape since its last backward).
void accumulate_grad(std::optional<Tensor>& grad, Tensor g, const std::string& what);

/// `torch.nn.Linear(in_features, out_features, bias)`: `y = x W^T + b`.
///
/// Initialisation (`reset_parameters`): the weight `[out_features, in_features]` is filled
/// with `uniform_(-1/sqrt(in_features), 1/sqrt(in_features))` (what
/// `kaiming_uniform_(a=sqrt(5))` reduces to), then the bias `[out_features]`, if any, with
/// the same bound: `in_features * out_features (+ out_features)` 32-bit draws.
class Linear : public Module {
public:
    /// Builds and initialises the layer from `gen`. A size may be 0, as in PyTorch: the
    /// empty weight draws nothing, and with `in_features == 0` the bias is drawn with bound 0
    /// (all zeros, `out_features` draws), so `forward` of `[N, 0]` gives the bias.
    /// @throws std::length_error (nothing drawn) when `[out_features, in_features]` (or the bias) cannot be
    /// allocated (`check_allocation`).
    Linear(std::size_t in_features, std::size_t out_features, bool bias = true,
           Generator& gen = default_generator());

    /// Wraps given parameters (e.g. weights split from a fused layer).
    /// weight: `[out_features, in_features]`; bias: `[out_features]` (or `[1]`, broadcast as
    /// PyTorch's `addmm` broadcasts it) if given.
    /// @throws std::invalid_argument when the weight is not 2-D or the bias does not fit.
    Linear(Tensor weight, std::optional<Tensor> bias);

    /// `forward(x)`: `[..., in_features] -> [..., out_features]` (also `[in_features]` ->
    /// `[out_features]`), computed as `x @ weight^T`, then `+ bias` (PyTorch's
    /// `addmm(bias, x, W.t())` on the CPU adds the bias after the product), the product by
    /// `gemm_rowmajor` (the reference BLAS's order).
    /// @throws std::invalid_argument when the last dimension of `x` is not `in_features`, or
    /// when `weight`/`bias` were replaced by tensors that do not fit (`check_parameters`);
    /// std::length_error when the output cannot be allocated.
    Tensor operator()(const Tensor& x) const;

    /// `forward` of `rows` rows into given memory, for the attention core's workspaces:
    /// `y[rows, out_features] = x[rows, in_features] @ weight^T + bias`, both contiguous
    /// row-major float32 buffers, the same bits as `operator()`.
    ///
    /// The layers' one hook for the arithmetic of their products (kernels/arithmetic.hpp), read
    /// by `operator()`, `backward` and the modules' projections alike: `automatic` (the
    /// default) is the calling thread's `ArithmeticGuard`, else `exact` (the reference BLAS's
    /// bits, above); `fma` computes the product with `fast::gemm`'s fused multiply-adds, in the
    /// same order (the bias still added after it).
    /// @throws std::invalid_argument when `weight`/`bias` do not fit (`check_parameters`).
    void forward_into(const float* x, std::size_t rows, float* y,
                      Arithmetic arithmetic = Arithmetic::automatic) const;

    /// `in_features`: the weight's second dimension.
    /// @throws std::invalid_argument when `weight` is not 2-D.
    std::size_t in_features() const;
    /// `out_features`: the weight's first dimension.
    /// @throws std::invalid_argument when `weight` is not 2-D.
    std::size_t out_features() const;

    /// Checks the public parameters: `weight` 2-D, `bias` (if any) `[out_features]` or `[1]`
    /// (one value added to every output, as PyTorch broadcasts it).
    /// @throws std::invalid_argument naming the parameter and both shapes otherwise.
    void check_parameters() const;

    /// The backward pass of `forward` (PyTorch's `AddmmBackward0`, or `MmBackward0` without a
    /// bias; llm.c's `matmul_backward`). For the forward's input `x [..., in_features]` and
    /// `grad_output = dL/dy [..., out_features]`, with the rows of both folded to `[N, *]`:
    /// - `weight.grad += grad_output^T @ x` (`[out_features, in_features]`, each element
    ///   summed over the N rows in order);
    /// - `bias.grad += grad_output.sum(0)` (`[out_features]`; for a `[1]` bias the sum of
    ///   every element, `grad_output.sum()` in PyTorch's order, `torch_sum`), in PyTorch's order of
    ///   `sum_to`: four partial sums over the rows, see `attn::detail::column_sums`);
    /// - returns `grad_input = grad_output @ weight` (`[..., in_features]`, summed over the
    ///   outputs in order).
    /// Every product sums as the reference BLAS does, so with Debian's python3-torch on that
    /// BLAS the gradients are PyTorch's bits. The first backward sets `.grad`, later ones add
    /// to it (`accumulate_grad`).
    /// @throws std::invalid_argument when `x` or `grad_output` do not fit the layer or each
    /// other, or a parameter or gradient was replaced by one that does not fit.
    Tensor backward(const Tensor& x, const Tensor& grad_output);

    /// The checks `backward` runs before it computes anything: the parameters
    /// (`check_parameters`), `x` of shape `[..., in_features]` and `grad_output` of `x`'s shape
    /// with `out_features` last. For callers of `backward_into` that hold the tensors.
    /// Returns N, the rows of both folded (`x`'s size over `in_features`).
    /// @throws std::invalid_argument naming the expected and actual shapes otherwise.
    std::size_t check_backward(const Shape& x, const Shape& grad_output) const;

    /// `backward` on contiguous row-major float32 buffers, for the modules' backward passes:
    /// `x [rows, in_features]`, `grad_output [rows, out_features]`; accumulates `.grad` and,
    /// when `grad_input` is not null, writes `grad_input [rows, in_features]`. Both products in
    /// `arithmetic`, as `forward_into` (`automatic`: the calling thread's; the bias's column
    /// sums are sums, the same in both).
    /// @throws std::invalid_argument as `backward`.
    void backward_into(const float* x, std::size_t rows, const float* grad_output, float* grad_input,
                       Arithmetic arithmetic = Arithmetic::automatic);

    /// `"Linear"`.
    std::string type_name() const override { return "Linear"; }
    /// `in_features=3, out_features=2, bias=False`, as PyTorch's repr prints it (notebook 001
    /// In [18]: `Linear(in_features=768, out_features=100, bias=True)`).
    /// @throws std::invalid_argument when `weight` is not 2-D.
    std::string extra_repr() const override;
    /// `weight`, then `bias` if any (`named_parameters()` then names them `weight`, `bias`).
    std::vector<NamedParameter> own_parameters() override;

    Tensor weight;              ///< `[out_features, in_features]`
    /// The bias as `[out_features]`: `bias` itself, a `[1]` bias repeated (as PyTorch
    /// broadcasts it), or zeros without a bias (what the layer adds then): for maps between
    /// layouts that fuse several layers' biases. @throws std::invalid_argument as `check_parameters`.
    Tensor bias_vector() const;

    std::optional<Tensor> bias;  ///< `[out_features]` (or `[1]`, broadcast), or none when built with `bias=false`
    std::optional<Tensor> weight_grad;  ///< `weight.grad`: `[out_features, in_features]`, empty until a backward
    std::optional<Tensor> bias_grad;    ///< `bias.grad`: `[out_features]`, empty until a backward
};

/// `torch.nn.Dropout(p)`: in training mode zeroes each element with probability `p` and
/// scales the kept ones by `1 / (1 - p)`; in evaluation mode returns the input.
///
/// Mirrors PyTorch 1.13's CPU `_dropout_impl` (aten/src/ATen/native/Dropout.cpp):
/// `noise.bernoulli_(1 - p); noise.div_(1 - p); return x * noise;`. The keep-mask is drawn
/// from the generator exactly as `bernoulli_(1 - p)` draws it, by the chosen backend
/// (`bernoulli_scalar_kernel*` in aten/src/ATen/native/cpu/DistributionKernels.cpp):
/// - `portable`: per element, row-major, one 64-bit draw turned into a double `u`; kept when
///   `u < 1 - p` (2 * numel 32-bit draws). Checked against Debian's python3-torch
///   (data/oracle/dropout/) and notebook 004 In [51].
/// - `mkl`: one 32-bit draw `s` seeds an MCG31m1 stream, `x_0 = s mod (2^31 - 1)` (1 if 0),
///   `x_{i+1} = 1132489760 x_i mod (2^31 - 1)`; element `i` is kept when
///   `x_i / (2^31 - 1) < 1 - p` (1 draw in all). PyTorch splits the tensor into chunks
///   (grain 800) that each skip the stream ahead to their first element, so the result does
///   not depend on the thread count. Checked against notebook 002 In [12] and In [13].
/// Kept entries are multiplied by `1 / float32(1 - p)` computed in float32 (for p = 0.999:
/// 999.99994, not 1000), dropped ones by 0 (so `-x` gives `-0`, `inf` gives NaN, as PyTorch).
/// `p == 0`, evaluation mode and empty tensors return the input and draw nothing; `p == 1`
/// returns `x * 0` and draws nothing.
class Dropout : public Module {
public:
    /// @throws std::invalid_argument when `p` is NaN or outside [0, 1], or `backend` is not
    /// one of the enumerators (`check_backend`).
    explicit Dropout(double p = 0.5, BernoulliBackend backend = BernoulliBackend::portable);

    /// `forward(x)`: any shape `[...]` (float32), returns the same shape.
    /// @throws std::invalid_argument when `p` (a public field) is NaN or outside [0, 1], or
    /// `backend` (a public field) is not one of the enumerators, even where no mask is drawn.
    Tensor operator()(const Tensor& x, Generator& gen = default_generator()) const;

    /// Whether `operator()` returns its input unchanged and draws nothing: evaluation mode or
    /// `p == 0`. A caller may then skip it (and its copy).
    /// @throws std::invalid_argument as `operator()`.
    bool is_identity() const;

    /// The 0/1 keep-mask `forward` would draw for a tensor of this shape (float32 0 and 1),
    /// advancing the generator the same way; a reader can print it. All ones in evaluation
    /// mode or for `p == 0`, all zeros for `p == 1` (no draws in these cases).
    /// @throws std::invalid_argument when `p` is NaN or outside [0, 1] or `backend` is not
    /// one of the enumerators; std::length_error when a tensor of `shape` cannot be
    /// allocated.
    Tensor keep_mask(const Shape& shape, Generator& gen = default_generator()) const;

    /// `keep_mask(shape, gen)` into `mask`, whose memory is reused when it already holds that
    /// many floats (`sized`): a training step's masks drawn into the last step's.
    /// @throws as `keep_mask` (`mask` unchanged then).
    void keep_mask_into(const Shape& shape, Tensor& mask, Generator& gen = default_generator()) const;

    /// `forward(x)` that also returns the multipliers it applied, for the backward pass:
    /// `noise = keep * (1 / float(1 - p))` of `x`'s shape (the same draws and result as
    /// `operator()`); an empty (0-d) tensor when nothing was drawn (evaluation mode, `p == 0`,
    /// an empty `x`), and zeros for `p == 1`.
    /// @throws std::invalid_argument as `operator()`.
    Tensor forward(const Tensor& x, Tensor& noise, Generator& gen = default_generator()) const;

    /// `forward(x, noise, gen)` in kept memory: the multipliers drawn into `noise`'s memory and
    /// the result written into `y`'s (`sized`), so that a training step reuses the last step's.
    /// Returns `x` itself when nothing is drawn (`noise` emptied), else `y`; `y` may be `x`.
    /// Shapes: `noise` and `y` get `x`'s `[...]`. The same draws and bits as `forward`
    /// (`y = x * noise`, as `forward`).
    /// @throws std::invalid_argument as `operator()` (`noise` and `y` unchanged then).
    const Tensor& forward_into(const Tensor& x, Tensor& noise, Tensor& y, Generator& gen = default_generator()) const;

    /// The backward pass of `forward` (PyTorch's `MulBackward0` of `input * noise`): the
    /// forward's mask reused, scaled by `1 / (1 - p)`: `grad_input = grad_output * noise`
    /// (`grad_output` itself when `noise` is empty). Shapes: `[...] -> [...]`.
    /// @throws std::invalid_argument when a non-empty `noise` does not have `grad_output`'s
    /// shape.
    static Tensor backward(const Tensor& grad_output, const Tensor& noise);

    /// `backward(grad_output, noise)` into `grad_input`'s memory (`sized`, `grad_output`'s shape
    /// `[...]`): returns `grad_output` itself when `noise` is empty, else `grad_input`, which may
    /// be `grad_output`. The same bits as `backward` (`MulBackward0`).
    /// @throws std::invalid_argument as `backward`.
    static const Tensor& backward_into(const Tensor& grad_output, const Tensor& noise, Tensor& grad_input);

    /// `"Dropout"`.
    std::string type_name() const override { return "Dropout"; }
    /// `p=0.2, inplace=False`, as PyTorch prints it (notebook 003 In [2]).
    std::string extra_repr() const override;

    double p;                  ///< drop probability
    BernoulliBackend backend;  ///< how the mask is drawn
    // `training` (Module): `module.train()` / `module.eval()`; masks are drawn in training only
};

/// `torch.nn.Embedding(num_embeddings, embedding_dim)`: a lookup table whose weight
/// `[num_embeddings, embedding_dim]` is initialised with `normal_(0, 1)` (both of
/// `normal_`'s paths, see generator.hpp).
class Embedding : public Module {
public:
    /// A size may be 0, as in PyTorch (a table with no rows accepts only empty id tensors).
    /// @throws std::length_error (nothing drawn) when the table cannot be allocated.
    Embedding(std::size_t num_embeddings, std::size_t embedding_dim,
              Generator& gen = default_generator());

    /// `forward(ids)`: int64 ids of any shape `[...]` -> `[..., embedding_dim]`.
    /// @throws std::invalid_argument when an id is outside `[0, num_embeddings)` or `weight`
    /// was replaced by a tensor that is not 2-D; std::length_error when the output cannot be
    /// allocated.
    Tensor operator()(const LongTensor& ids) const;

    /// The backward pass of `forward` (`embedding_dense_backward` of PyTorch's CPU backend):
    /// `grad_output [..., embedding_dim]` for the ids `[...]` of the forward; row `ids[i]` of
    /// `weight.grad` receives `grad_output[i]`, the rows of a repeated id added in the order
    /// they occur, starting from zeros; then accumulated into `.grad` (`accumulate_grad`).
    /// The ids themselves have no gradient. The rows the ids name are summed in this thread's
    /// kept scratch table (no [num_embeddings, embedding_dim] temporary per step).
    /// @throws std::invalid_argument when `grad_output` is not `[..., embedding_dim]` for
    /// these ids or an id is out of range.
    void backward(const LongTensor& ids, const Tensor& grad_output);

    /// `"Embedding"`.
    std::string type_name() const override { return "Embedding"; }
    /// `num_embeddings, embedding_dim`, as PyTorch prints it: `Embedding(50257, 768)`.
    /// @throws std::invalid_argument when `weight` is not 2-D.
    std::string extra_repr() const override;
    /// `weight`.
    std::vector<NamedParameter> own_parameters() override;

    Tensor weight;  ///< `[num_embeddings, embedding_dim]`
    std::optional<Tensor> weight_grad;  ///< `weight.grad`, empty until a backward
};

/// `torch.nn.RMSNorm(normalized_shape, eps)` over the last dimension (torch >= 2.4; Gated
/// DeltaNet's output norm): `y = x * rsqrt(mean(x^2) + eps) * weight`, with the weight
/// `[normalized_shape]` initialised to ones (nothing is drawn).
///
/// The arithmetic of torch's composite `rms_norm`: `x * x`, their sum in PyTorch's order
/// (`sum_torch`, elementwise.hpp) divided by `normalized_shape` (`mean`), plus `eps` as a float,
/// `1 / sqrt(.)` (`rsqrt`), times `x`, times the weight. `eps` unset is PyTorch's `eps=None`:
/// float32's machine epsilon.
class RMSNorm : public Module {
public:
    /// @throws std::invalid_argument when `eps` is negative or NaN; std::length_error when the
    /// weight cannot be allocated.
    explicit RMSNorm(std::size_t normalized_shape, std::optional<double> eps = std::nullopt);

    /// `forward(x)`: `[..., normalized_shape] -> [..., normalized_shape]`, float32.
    /// @throws std::invalid_argument when the last dimension of `x` is not the weight's size,
    /// or the public fields no longer fit (`check_parameters`).
    Tensor operator()(const Tensor& x) const;

    /// `forward` of `rows` contiguous rows into given memory (`y` may be `x`).
    /// @throws std::invalid_argument as `check_parameters`.
    void forward_into(const float* x, std::size_t rows, float* y) const;

    /// The normalised width: the weight's size.
    /// @throws std::invalid_argument when `weight` is not 1-D.
    std::size_t normalized_shape() const;

    /// Checks the public fields: `weight` 1-D and non-empty, `eps` (if set) not negative or NaN.
    /// @throws std::invalid_argument naming the field otherwise.
    void check_parameters() const;

    /// `"RMSNorm"`.
    std::string type_name() const override { return "RMSNorm"; }
    /// `(64,), eps=1e-06, elementwise_affine=True`, as PyTorch prints it.
    /// @throws std::invalid_argument when `weight` is not 1-D.
    std::string extra_repr() const override;
    /// `weight`.
    std::vector<NamedParameter> own_parameters() override { return {{"weight", &weight, &weight_grad}}; }

    Tensor weight;               ///< `[normalized_shape]`, ones at construction
    std::optional<double> eps;   ///< added to the mean square; unset: float32's epsilon
    std::optional<Tensor> weight_grad;  ///< `weight.grad`: no backward fills it yet
};

/// `torch.nn.Parameter(torch.rand(d_in, d_out))`: a `[d_in, d_out]` matrix of uniforms in
/// [0, 1), used as `x @ W` (note: the transpose of `Linear`'s layout). Notebook 004 In [16]
/// and the book's `SelfAttention_v1`.
Tensor rand_parameter(std::size_t d_in, std::size_t d_out, Generator& gen = default_generator());

}  // namespace attn::nn
