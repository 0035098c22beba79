// NaN in, NaN out (issue 19): every function of core/, nn/ and print/ that the oracle covers
// gives PyTorch's answer when NaN or an infinity goes in -- NaN exactly where PyTorch has it,
// every other value bit for bit. Expected values: data/oracle/nan_cases.json, recorded from
// Debian's python3-torch by tools/oracle/nan_cases.py (its provenance is in the file). The
// attention kernels' NaN tests live with the kernels.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "attn/attention/sdpa.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/generator.hpp"
#include "attn/nn/nn.hpp"
#include "attn/print/numpy.hpp"
#include "attn/print/python.hpp"
#include "attn/print/torch.hpp"
#include "oracle.hpp"

namespace test_nan {  // every test file is a namespace of its own (tests/meson.build)

namespace {

using attn::Tensor;
using nlohmann::json;

Tensor float_tensor(const json& t) {
    REQUIRE(t["dtype"] == "float32");
    Tensor out = attn::zeros(t["shape"].get<attn::Shape>());
    REQUIRE(t["bits"].size() == out.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
        const auto u = t["bits"][i].get<std::uint32_t>();
        std::memcpy(out.data() + i, &u, sizeof u);
    }
    return out;
}

// NaN where the oracle has NaN (any payload or sign), every other value bit for bit, or
// within `tolerance` when one is given.
void check_float(const Tensor& got, const json& expected, float tolerance = 0.0f) {
    const Tensor want = float_tensor(expected);
    REQUIRE(attn::shape_of(got) == attn::shape_of(want));
    for (std::size_t i = 0; i < want.size(); ++i) {
        const float g = got.data()[i], w = want.data()[i];
        INFO("element " << i << ": got " << g << ", PyTorch " << w);
        if (std::isnan(w)) {
            CHECK(std::isnan(g));
        } else if (tolerance > 0.0f && std::isfinite(w)) {
            CHECK(std::abs(g - w) <= tolerance);
        } else {
            std::uint32_t gb = 0, wb = 0;
            std::memcpy(&gb, &g, sizeof g);
            std::memcpy(&wb, &w, sizeof w);
            CHECK(gb == wb);
        }
    }
}

attn::LongTensor long_tensor(const std::vector<std::int64_t>& v) {
    attn::LongTensor t = xt::zeros<std::int64_t>(attn::Shape{v.size()});
    for (std::size_t i = 0; i < v.size(); ++i) t(i) = v[i];
    return t;
}

using Inputs = std::vector<Tensor>;
using Call = std::function<void(const Inputs&, const json& args, const json& c)>;

// One entry per function the oracle covers: how to call the library and compare.
const std::map<std::string, Call>& calls() {
    static const std::map<std::string, Call> table = {
        {"softmax", [](const Inputs& in, const json&, const json& c) { check_float(attn::softmax(in[0]), c["output"]); }},
        {"masked_softmax", [](const Inputs& in, const json&, const json& c) { check_float(attn::masked_softmax(in[0]), c["output"]); }},
        {"masked_softmax_first_row", [](const Inputs& in, const json&, const json& c) {
             const Tensor out = attn::masked_softmax(in[0]);
             check_float(attn::slice(out, 0, 0, 1), c["output"]);
             // The fully masked row: masked_softmax's own rule (zeros), documented in padding.hpp.
             CHECK(attn::max_abs_diff(attn::slice(out, 0, 1, 2), attn::zeros({1, 2})) == 0.0f);
         }},
        {"log_softmax", [](const Inputs& in, const json&, const json& c) { check_float(attn::log_softmax(in[0]), c["output"]); }},
        {"cross_entropy", [](const Inputs& in, const json& a, const json& c) {
             check_float(attn::cross_entropy(in[0], long_tensor(a["targets"].get<std::vector<std::int64_t>>())), c["output"]);
         }},
        {"sum_dim", [](const Inputs& in, const json& a, const json& c) { check_float(attn::sum(in[0], a["dim"].get<long>()), c["output"]); }},
        {"sum_all", [](const Inputs& in, const json&, const json& c) { check_float(attn::sum(in[0]), c["output"]); }},
        {"argmax", [](const Inputs& in, const json& a, const json& c) {
             const attn::LongTensor got = attn::argmax(in[0], a["dim"].get<long>());
             const auto want = c["output"]["values"].get<std::vector<std::int64_t>>();
             REQUIRE(got.size() == want.size());
             for (std::size_t i = 0; i < want.size(); ++i) CHECK(got.data()[i] == want[i]);
         }},
        {"exp", [](const Inputs& in, const json&, const json& c) { check_float(attn::exp(in[0]), c["output"]); }},
        {"tril", [](const Inputs& in, const json& a, const json& c) { check_float(attn::tril(in[0], a["diagonal"].get<long>()), c["output"]); }},
        {"triu", [](const Inputs& in, const json& a, const json& c) { check_float(attn::triu(in[0], a["diagonal"].get<long>()), c["output"]); }},
        {"transpose", [](const Inputs& in, const json&, const json& c) { check_float(attn::transpose(in[0], 0, 1), c["output"]); }},
        {"cat", [](const Inputs& in, const json&, const json& c) { check_float(attn::cat(in, 0), c["output"]); }},
        {"stack", [](const Inputs& in, const json&, const json& c) { check_float(attn::stack(in, 0), c["output"]); }},
        {"masked_fill", [](const Inputs& in, const json& a, const json& c) {
             const float value = a["value"].is_string() ? std::nanf("") : a["value"].get<float>();
             check_float(attn::masked_fill(in[0], attn::to_bool(in[1]), value), c["output"]);
         }},
        {"matmul", [](const Inputs& in, const json&, const json& c) { check_float(attn::matmul(in[0], in[1]), c["output"]); }},
        // PyTorch 1.13 composed the math path; the scale is applied in another order here.
        // The default backend only: the attention core's own tests run every backend.
        {"scaled_dot_product_attention", [](const Inputs& in, const json&, const json& c) {
             check_float(attn::scaled_dot_product_attention(in[0], in[1], in[2]), c["output"], 1e-6f);
         }},
        {"scaled_dot_product_attention_causal", [](const Inputs& in, const json&, const json& c) {
             attn::SDPAOptions causal;
             causal.is_causal = true;
             check_float(attn::scaled_dot_product_attention(in[0], in[1], in[2], causal), c["output"], 1e-6f);
         }},
        // MaskOp::additive on every backend (the fast and tiled ones run the step path here:
        // a hidden key's score is not finite).
        {"scaled_dot_product_attention_causal_additive", [](const Inputs& in, const json&, const json& c) {
             for (const auto backend : {attn::SDPABackend::step, attn::SDPABackend::fast, attn::SDPABackend::tiled}) {
                 attn::SDPAOptions o;
                 o.is_causal = true;
                 o.mask_op = attn::MaskOp::additive;
                 o.backend = backend;
                 INFO(attn::backend_name(backend));
                 check_float(attn::scaled_dot_product_attention(in[0], in[1], in[2], o), c["output"], 1e-6f);
             }
         }},
        {"linear", [](const Inputs& in, const json&, const json& c) {
             check_float(attn::nn::Linear(in[1], in[2])(in[0]), c["output"]);
         }},
        {"dropout", [](const Inputs& in, const json& a, const json& c) {
             attn::manual_seed(a["seed"].get<std::uint64_t>());
             const double p = a["p_percent"].get<int>() / 100.0;
             check_float(attn::nn::Dropout(p, attn::nn::BernoulliBackend::portable)(in[0]), c["output"]);
         }},
        {"embedding", [](const Inputs& in, const json& a, const json& c) {
             attn::nn::Embedding e(0, 0);
             e.weight = in[0];
             check_float(e(long_tensor(a["ids"].get<std::vector<std::int64_t>>())), c["output"]);
         }},
        {"repr", [](const Inputs& in, const json&, const json& c) { CHECK(attn::repr(in[0]) == c["text"].get<std::string>()); }},
        {"numpy_str", [](const Inputs& in, const json&, const json& c) { CHECK(attn::numpy_str(in[0]) == c["text"].get<std::string>()); }},
        {"repr_float", [](const Inputs&, const json&, const json& c) {
             const std::string want = c["text"].get<std::string>();
             CHECK(attn::repr_float(want == "nan" ? std::nan("") : -INFINITY) == want);
         }},
    };
    return table;
}

}  // namespace

TEST_CASE("NaN in, NaN out: every function the oracle covers gives PyTorch's answer") {
    const auto& cases = test::oracle_file("nan_cases.json")["cases"];
    REQUIRE(cases.size() >= 50);
    std::set<std::string> covered;
    for (const auto& c : cases) {
        const std::string name = c["name"].get<std::string>();
        const std::string call = c["call"].get<std::string>();
        INFO("case " << name << " (" << call << ")");
        const auto it = calls().find(call);
        REQUIRE(it != calls().end());
        Inputs inputs;
        for (const auto& t : c["inputs"]) inputs.push_back(float_tensor(t));
        it->second(inputs, c["args"], c);
        covered.insert(call);
    }
    // Every function of the table has at least one case: none is silently skipped.
    CHECK(covered.size() == calls().size());
}

}  // namespace test_nan
