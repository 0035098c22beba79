// Placeholder: implemented by the generator work (see generator.hpp).
#include "attn/generator.hpp"

#include <stdexcept>

namespace attn {

Generator::Generator(std::uint64_t seed) { manual_seed(seed); }

void Generator::manual_seed(std::uint64_t seed) {
    engine_.seed(static_cast<std::uint32_t>(seed));
    next_double_normal_sample.reset();
    draws_ = 0;
}

std::uint32_t Generator::random() {
    ++draws_;
    return static_cast<std::uint32_t>(engine_());
}

std::uint64_t Generator::random64() {
    const std::uint64_t a = random();
    const std::uint64_t b = random();
    return (a << 32) | b;
}

double Generator::uniform_double() {
    return static_cast<double>(random64() & ((1ULL << 53) - 1)) * 0x1p-53;
}

float Generator::uniform_float() {
    return static_cast<float>(random() & ((1U << 24) - 1)) * 0x1p-24f;
}

Generator& default_generator() {
    static Generator gen;
    return gen;
}

void manual_seed(std::uint64_t seed) { default_generator().manual_seed(seed); }

Tensor rand(const Shape& size, Generator& gen) {
    Tensor t = xt::zeros<float>(size);
    for (auto& x : t) x = gen.uniform_float();
    return t;
}

Tensor& uniform_(Tensor& t, double from, double to, Generator& gen) {
    if (from > to) throw std::invalid_argument("uniform_: expected from <= to");
    const float f = static_cast<float>(from);
    const float range = static_cast<float>(to) - f;
    for (auto& x : t) x = gen.uniform_float() * range + f;
    return t;
}

LongTensor randint(std::int64_t low, std::int64_t high, const Shape& size, Generator& gen) {
    if (low >= high) throw std::invalid_argument("randint: expected low < high");
    const std::uint64_t range = static_cast<std::uint64_t>(high - low);
    LongTensor t = xt::zeros<std::int64_t>(size);
    for (auto& x : t) x = low + static_cast<std::int64_t>(gen.random() % range);
    return t;
}

LongTensor randint(std::int64_t high, const Shape& size, Generator& gen) {
    return randint(0, high, size, gen);
}

Tensor randn(const Shape& size, Generator& gen) {
    Tensor t = xt::zeros<float>(size);
    return normal_(t, 0.0, 1.0, gen);
}

Tensor& normal_(Tensor& t, double, double, Generator&) {
    throw std::logic_error("normal_: not implemented yet");
    return t;
}

}  // namespace attn
