#include "attn/chapter.hpp"
