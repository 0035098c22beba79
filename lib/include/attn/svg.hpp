/// @file svg.hpp
/// @brief Placeholder.
#pragma once
