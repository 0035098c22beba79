#include "attn/book.hpp"
