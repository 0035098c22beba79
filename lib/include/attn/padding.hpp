/// @file padding.hpp
/// @brief Placeholder.
#pragma once
