// Tests for torch.optim.SGD and torch.optim.AdamW (lib/attn/nn/optim.hpp).
//
// Expected values come from the oracle: Debian's python3-torch 1.13.1, recorded by
// tools/oracle/optim.py into data/oracle/optim.json (50 steps of each optimizer on four random
// parameters, one of which has no gradient for its first 10 steps; every value as float32
// bits). Bound: 0 ulp, every parameter after every step. The control shows the bound has
// teeth: SGD written without PyTorch's fused `add_(alpha=-lr)` parts from it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "oracle.hpp"
#include "support.hpp"
#include "attn/core/functional.hpp"
#include "attn/core/ulp.hpp"
#include "attn/nn/optim.hpp"

namespace test_optim {  // every test file is a namespace of its own (tests/meson.build)

using json = nlohmann::json;
using attn::Tensor;

namespace {

// The oracle's four parameters and their gradients, laid out as a module would hold them.
struct Params {
    std::vector<std::string> names;
    std::vector<attn::Shape> shapes;
    std::vector<Tensor> values;
    std::vector<std::optional<Tensor>> grads;

    explicit Params(const json& c) {
        for (const auto& p : test::oracle_file("optim.json")["parameters"]) {
            names.push_back(p["name"].get<std::string>());
            shapes.push_back(p["shape"].get<attn::Shape>());
        }
        for (std::size_t i = 0; i < names.size(); ++i)
            values.push_back(test::oracle_bits_tensor(shapes[i], c["initial"][names[i]]));
        grads.resize(names.size());
    }
    std::vector<attn::nn::NamedParameter> named() {
        std::vector<attn::nn::NamedParameter> out;
        for (std::size_t i = 0; i < names.size(); ++i) out.push_back({names[i], &values[i], &grads[i]});
        return out;
    }
    // Sets every .grad as the oracle did before step k (null: no gradient).
    void give_grads(const json& step) {
        for (std::size_t i = 0; i < names.size(); ++i) {
            const json& g = step["grads"][names[i]];
            if (g.is_null())
                grads[i].reset();
            else
                grads[i] = test::oracle_bits_tensor(shapes[i], g);
        }
    }
    // The largest ulp distance of any parameter from the oracle's after this step.
    std::int64_t max_ulp_from(const json& step) const {
        std::int64_t worst = 0;
        for (std::size_t i = 0; i < names.size(); ++i)
            worst = std::max(worst, attn::max_ulp_distance(values[i],
                                                           test::oracle_bits_tensor(shapes[i], step["params"][names[i]])));
        return worst;
    }
};

// The optimizers of the oracle's cases, built as its `python` field says.
std::unique_ptr<attn::optim::Optimizer> make(const std::string& name,
                                             std::vector<attn::nn::NamedParameter> p) {
    using namespace attn::optim;
    if (name == "sgd_plain") return std::make_unique<SGD>(p, SGDOptions{.lr = 0.1});
    if (name == "sgd_momentum")
        return std::make_unique<SGD>(p, SGDOptions{.lr = 0.05, .momentum = 0.9, .dampening = 0.1,
                                                   .weight_decay = 0.01});
    if (name == "sgd_nesterov")
        return std::make_unique<SGD>(p, SGDOptions{.lr = 0.05, .momentum = 0.8, .weight_decay = 0.001,
                                                   .nesterov = true});
    if (name == "adamw_default") return std::make_unique<AdamW>(p);
    if (name == "adamw_custom")
        return std::make_unique<AdamW>(p, AdamWOptions{.lr = 0.01, .beta1 = 0.8, .beta2 = 0.99,
                                                       .eps = 1e-6, .weight_decay = 0.1});
    if (name == "adamw_no_decay")
        return std::make_unique<AdamW>(p, AdamWOptions{.lr = 0.1, .weight_decay = 0.0});
    FAIL("no optimizer for oracle case " << name);
    return nullptr;
}

}  // namespace

TEST_CASE("optim: SGD and AdamW give PyTorch 1.13's bits for 50 steps (0 ulp)") {
    const json& cases = test::oracle_file("optim.json")["cases"];
    REQUIRE(cases.size() == 6);
    for (const json& c : cases) {
        const std::string name = c["name"].get<std::string>();
        INFO("case " << name << ": " << c["python"].get<std::string>());
        Params params(c);
        auto opt = make(name, params.named());
        std::int64_t worst = 0;
        int steps = 0;
        for (const json& step : c["steps"]) {
            opt->zero_grad();
            params.give_grads(step);
            opt->step();
            worst = std::max(worst, params.max_ulp_from(step));
            ++steps;
        }
        CHECK(steps == 50);
        CHECK(worst == 0);
    }
}

TEST_CASE("optim: control, SGD without the fused add parts from PyTorch", "[!shouldfail]") {
    // p = p + (-lr) * g, two roundings, where PyTorch's add_(g, alpha=-lr) rounds once.
    const json& c = test::oracle_case("optim.json", "sgd_plain");
    Params params(c);
    std::int64_t worst = 0;
    for (const json& step : c["steps"]) {
        params.give_grads(step);
        for (std::size_t i = 0; i < params.values.size(); ++i) {
            if (!params.grads[i]) continue;
            for (std::size_t j = 0; j < params.values[i].size(); ++j) {
                volatile float product = static_cast<float>(-0.1) * params.grads[i]->data()[j];
                params.values[i].data()[j] = params.values[i].data()[j] + product;
            }
        }
        worst = std::max(worst, params.max_ulp_from(step));
    }
    CHECK(worst == 0);
}

TEST_CASE("optim: zero_grad fills existing gradients with zeros, or empties them") {
    Tensor w = attn::ones({2, 3});
    Tensor b = attn::ones({3});
    std::optional<Tensor> w_grad = attn::ones({2, 3});
    std::optional<Tensor> b_grad;
    attn::optim::SGD sgd({{"w", &w, &w_grad}, {"b", &b, &b_grad}}, {.lr = 0.5});
    sgd.zero_grad();
    REQUIRE(w_grad.has_value());
    CHECK(attn::max_ulp_distance(*w_grad, attn::zeros({2, 3})) == 0);
    CHECK_FALSE(b_grad.has_value());
    sgd.step();  // a zero gradient moves nothing, a missing one is skipped
    CHECK(attn::max_ulp_distance(w, attn::ones({2, 3})) == 0);
    CHECK(attn::max_ulp_distance(b, attn::ones({3})) == 0);
    sgd.zero_grad(/*set_to_none=*/true);
    CHECK_FALSE(w_grad.has_value());
}

TEST_CASE("optim: bad options and bad gradients are refused with PyTorch's words") {
    using namespace attn::optim;
    Tensor w = attn::ones({2, 3});
    std::optional<Tensor> grad;
    std::vector<attn::nn::NamedParameter> p{{"W.weight", &w, &grad}};
    CHECK_THROWS_WITH(SGD(p, {.lr = -1.0}), Catch::Contains("Invalid learning rate: -1.0"));
    CHECK_THROWS_WITH(SGD(p, {.lr = 0.1, .momentum = -0.5}), Catch::Contains("Invalid momentum value: -0.5"));
    CHECK_THROWS_WITH(SGD(p, {.lr = 0.1, .nesterov = true}),
                      Catch::Contains("Nesterov momentum requires a momentum and zero dampening"));
    CHECK_THROWS_WITH(AdamW(p, {.beta1 = 1.0}), Catch::Contains("Invalid beta parameter at index 0: 1.0"));
    CHECK_THROWS_WITH(AdamW(p, {.eps = -1e-8}), Catch::Contains("Invalid epsilon value: -1e-08"));
    CHECK_THROWS_WITH(AdamW(p, {.weight_decay = std::nan("")}), Catch::Contains("Invalid weight_decay value: nan"));
    CHECK_THROWS_WITH(SGD({{"x", nullptr, &grad}}, {.lr = 0.1}), Catch::Contains("'x'") && Catch::Contains("null"));

    AdamW adamw(p);
    grad = attn::ones({3, 2});
    CHECK_THROWS_WITH(adamw.step(),
                      Catch::Contains("AdamW.step") && Catch::Contains("W.weight") && Catch::Contains("[2, 3]") &&
                      Catch::Contains("[3, 2]"));
    CHECK(attn::max_ulp_distance(w, attn::ones({2, 3})) == 0);  // nothing moved
    CHECK(adamw.state()[0].step == 0);
    adamw.options.lr = -0.1;  // a public field changed between steps is checked at the step
    grad = attn::ones({2, 3});
    CHECK_THROWS_WITH(adamw.step(), Catch::Contains("Invalid learning rate: -0.1"));
}

}  // namespace test_optim
