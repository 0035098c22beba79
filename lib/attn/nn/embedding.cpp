// nn::Embedding: the token lookup table of notebook 001 In [3] and In [6].
#include <string>
#include <vector>

#include "attn/core/reduce.hpp"
#include "attn/nn/nn.hpp"

namespace attn::nn {

Embedding::Embedding(std::size_t num_embeddings, std::size_t embedding_dim, Generator& gen) {
    check_allocation("Embedding (weight [num_embeddings, embedding_dim])",
                     Shape{num_embeddings, embedding_dim});
    // reset_parameters: init.normal_(self.weight) on the whole [num, dim] table at once, so
    // a table of 16 or more elements takes normal_'s vectorised path (fill with uniforms,
    // then Box-Muller in blocks of 16).
    weight = xt::empty<float>(Shape{num_embeddings, embedding_dim});
    normal_(weight, 0.0, 1.0, gen);
}

Tensor Embedding::operator()(const LongTensor& ids) const {
    check_rank("Embedding (weight)", shape_of(weight), 2);  // public: may have been replaced
    const std::size_t num = weight.shape()[0], dim = weight.shape()[1];
    Shape out_shape = shape_of(ids);
    out_shape.push_back(dim);
    check_allocation("Embedding (output)", out_shape);
    Tensor out = xt::empty<float>(out_shape);
    // F.embedding is a row gather: row ids[i] of the table becomes output row i (row-major ids).
    std::size_t i = 0;
    for (const std::int64_t id : ids) {
        if (id < 0 || static_cast<std::uint64_t>(id) >= num)
            throw std::invalid_argument("Embedding: index " + std::to_string(id) +
                                        " out of range [0, " + std::to_string(num) + ")");
        std::copy_n(weight.data() + static_cast<std::size_t>(id) * dim, dim, out.data() + i * dim);
        ++i;
    }
    return out;
}

void Embedding::backward(const LongTensor& ids, const Tensor& grad_output) {
    check_rank("Embedding (weight)", shape_of(weight), 2);
    const std::size_t num = weight.shape()[0], dim = weight.shape()[1];
    Shape want = shape_of(ids);
    want.push_back(dim);
    check_same_shape("Embedding::backward (grad_output)", want, shape_of(grad_output));
    for (const std::int64_t id : ids)  // every id checked before anything is added
        if (id < 0 || static_cast<std::uint64_t>(id) >= num)
            throw std::invalid_argument("Embedding::backward: index " + std::to_string(id) +
                                        " out of range [0, " + std::to_string(num) + ")");
    // embedding_dense_backward_cpu: zeros, then row ids[i] += grad_output[i] in order; then
    // AccumulateGrad adds that to an existing .grad. With a .grad already there, only the rows
    // the ids name are summed (in a scratch table), and every other row gets `grad + 0`, which
    // is what the full addition gives it (a -0 becomes +0): the same bits, without a
    // [num_embeddings, embedding_dim] temporary (154 MB for GPT-2) at every step.
    // The first backward (no .grad yet) gets zeros, then takes the same path: +0 + (its rows'
    // sums), and a sum that starts at +0 is never -0, so these are the bits of the zeros-then-
    // rows table, with the scratch below sized at the first step rather than the second.
    if (weight_grad) check_same_shape("Embedding (weight) (.grad)", Shape{num, dim}, shape_of(*weight_grad));
    else weight_grad = Tensor(xt::zeros<float>(Shape{num, dim}));
    // id -> its row in `touched`, and the touched rows: this thread's, kept between steps (a
    // step's in the last step's memory, no page faulted in again)
    thread_local std::vector<std::int64_t> slot;
    thread_local std::vector<float> touched;
    slot.assign(num, -1);
    touched.clear();
    std::size_t i = 0, used = 0;  // used: rows of `touched` (counted, not touched.size() / dim: dim may be 0)
    for (const std::int64_t id : ids) {
        auto& s = slot[static_cast<std::size_t>(id)];
        if (s < 0) {
            s = static_cast<std::int64_t>(used++);
            touched.resize(used * dim, 0.0f);
        }
        float* row = touched.data() + static_cast<std::size_t>(s) * dim;
        const float* src = grad_output.data() + i * dim;
        for (std::size_t e = 0; e < dim; ++e) row[e] = row[e] + src[e];
        ++i;
    }
    float* g = weight_grad->data();
    const auto n = static_cast<long>(num);
    // This thread's tables through pointers: inside the parallel loop each worker would name its own.
    const std::int64_t* slots = slot.data();
    const float* rows = touched.data();
#pragma omp parallel for schedule(static) if (num * dim >= detail::kParallelFloats)
    for (long k = 0; k < n; ++k) {
        float* out = g + static_cast<std::size_t>(k) * dim;
        const std::int64_t s = slots[k];
        if (s < 0) {
            for (std::size_t e = 0; e < dim; ++e) out[e] = out[e] + 0.0f;
        } else {
            const float* add = rows + static_cast<std::size_t>(s) * dim;
            for (std::size_t e = 0; e < dim; ++e) out[e] = out[e] + add[e];
        }
    }
}

std::string Embedding::extra_repr() const {
    const Shape s = shape_of(weight);
    if (s.size() != 2) throw_shape_error("Embedding (weight)", "[num_embeddings, embedding_dim]", s);
    return std::to_string(s[0]) + ", " + std::to_string(s[1]);
}

std::vector<NamedParameter> Embedding::own_parameters() { return {{"weight", &weight, &weight_grad}}; }

}  // namespace attn::nn
