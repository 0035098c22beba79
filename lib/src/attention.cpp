#include "attn/attention.hpp"
