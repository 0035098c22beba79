// Tensor parallelism of the GPT model's blocks (tensor_parallel.hpp).
#include "attn/dist/tensor_parallel.hpp"

#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

#include <xtensor/xview.hpp>

namespace attn::dist {

namespace {

std::size_t share(std::size_t n, std::size_t ranks, const char* what, const char* where) {
    if (ranks == 0 || n % ranks != 0)
        throw std::invalid_argument(std::string(where) + ": " + std::to_string(n) + " " + what + " do not split over " +
                                    std::to_string(ranks) + " ranks (each rank takes the same share)");
    return n / ranks;
}

std::optional<Tensor> rows_of(const std::optional<Tensor>& bias, std::size_t ranks, std::size_t rank) {
    if (!bias) return std::nullopt;
    return rows_of_rank(*bias, ranks, rank);
}

}  // namespace

struct TensorParallelGPT::Block {
    const TransformerBlock* whole;       // its layer norms (whole on every rank)
    nn::Linear W_query, W_key, W_value;  // this rank's heads: their rows (and biases)
    nn::Linear out_proj;                 // its columns, without the bias
    Tensor out_bias;                     // out_proj's bias, added once after the all-reduce
    nn::Linear fc1, fc2;                 // rows of the first layer, columns of the second (no bias)
    Tensor fc2_bias;                     // the second layer's bias, added once
    std::size_t num_heads, head_dim;     // this rank's heads, their width
};

TensorParallelGPT::~TensorParallelGPT() = default;

Tensor rows_of_rank(const Tensor& x, std::size_t ranks, std::size_t rank) {
    const Shape s = shape_of(x);
    if (s.empty()) throw_shape_error("rows_of_rank", "at least 1-D", s);
    const std::size_t n = share(s[0], ranks, "rows", "rows_of_rank");
    return xt::view(x, xt::range(rank * n, (rank + 1) * n));
}

Tensor columns_of_rank(const Tensor& x, std::size_t ranks, std::size_t rank) {
    const Shape s = shape_of(x);
    check_rank("columns_of_rank", s, 2);
    const std::size_t n = share(s[1], ranks, "columns", "columns_of_rank");
    return xt::view(x, xt::all(), xt::range(rank * n, (rank + 1) * n));
}

TensorParallelGPT::TensorParallelGPT(const Communicator& comm, const GPTModel& model)
    : comm_(comm), model_(&model) {
    const std::size_t P = std::size_t(comm.size()), r = std::size_t(comm.rank());
    for (const TransformerBlock& block : model.trf_blocks) {
        const MultiHeadAttention& att = block.att;
        const std::size_t heads = share(att.num_heads, P, "heads", "TensorParallelGPT");
        const auto split_rows = [&](const nn::Linear& l) { return nn::Linear(rows_of_rank(l.weight, P, r), rows_of(l.bias, P, r)); };
        const auto split_columns = [&](const nn::Linear& l) { return nn::Linear(columns_of_rank(l.weight, P, r), std::nullopt); };
        const nn::Linear& fc1 = block.ff.layers.get<0>();
        const nn::Linear& fc2 = block.ff.layers.get<2>();
        share(fc1.out_features(), P, "feed-forward units", "TensorParallelGPT");
        // Heads h of this rank are the rows [h hd, (h + 1) hd) of W_query, W_key and W_value and
        // the same columns of out_proj: one contiguous share of each.
        blocks_.push_back({&block, split_rows(att.W_query), split_rows(att.W_key), split_rows(att.W_value),
                           split_columns(att.out_proj), att.out_proj.bias_vector(), split_rows(fc1), split_columns(fc2),
                           fc2.bias_vector(), heads, att.head_dim});
    }
}

Tensor TensorParallelGPT::operator()(const LongTensor& in_idx) const {
    const Shape s = shape_of(in_idx);
    check_rank("TensorParallelGPT (in_idx)", s, 2);
    LongTensor positions = LongTensor::from_shape({s[1]});
    for (std::size_t t = 0; t < s[1]; ++t) positions(t) = std::int64_t(t);
    Tensor x = model_->tok_emb(in_idx) + model_->pos_emb(positions);  // [b, T, E]
    for (const Block& b : blocks_) {
        const Tensor h = b.whole->norm1(x);
        const Tensor queries = b.W_query(h), keys = b.W_key(h), values = b.W_value(h);  // [b, T, d / P]
        SDPAOptions options;  // MultiHeadAttention's: causal, scores / sqrt(head_dim)
        options.is_causal = true;
        options.scale = ScoreScale::divide_by(std::sqrt(static_cast<float>(b.head_dim)));
        const Tensor context = attend(HeadsView::split(queries, b.num_heads, b.head_dim),
                                      HeadsView::split(keys, b.num_heads, b.head_dim),
                                      HeadsView::split(values, b.num_heads, b.head_dim), options);
        Tensor a = b.out_proj(context);  // this rank's heads through its columns of out_proj
        comm_.all_reduce_sum(a.data(), a.size());
        x = (a + b.out_bias) + x;  // the bias once, then the shortcut (his order: out_proj, + x)
        Tensor f = b.fc2(gelu(b.fc1(b.whole->norm2(x))));
        comm_.all_reduce_sum(f.data(), f.size());
        x = (f + b.fc2_bias) + x;
    }
    return model_->out_head(model_->final_norm(x));
}

std::size_t TensorParallelGPT::parameters_held() const {
    std::size_t n = model_->tok_emb.weight.size() + model_->pos_emb.weight.size() + model_->out_head.weight.size() +
                    2 * model_->final_norm.scale.size();
    for (const Block& b : blocks_) {
        n += b.W_query.weight.size() + b.W_key.weight.size() + b.W_value.weight.size() +
             b.out_proj.weight.size() + b.out_bias.size() + b.fc1.weight.size() + b.fc2.weight.size() +
             b.fc2_bias.size() + 4 * b.whole->norm1.scale.size();
        for (const nn::Linear* l : {&b.W_query, &b.W_key, &b.W_value, &b.fc1})
            if (l->bias) n += l->bias->size();
    }
    return n;
}

}  // namespace attn::dist
