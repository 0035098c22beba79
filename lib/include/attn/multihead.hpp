/// @file multihead.hpp
/// @brief Placeholder.
#pragma once
