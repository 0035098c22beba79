/// @file kv_cache.hpp
/// @brief Placeholder.
#pragma once
