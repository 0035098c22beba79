#include "attn/functional.hpp"
