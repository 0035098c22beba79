#include "attn/nn.hpp"
