// SPDX-License-Identifier: MIT
// An independent check of a program's synchronisation between its engine
// streams, from the instructions alone.
#pragma once

#include <cstddef>
#include <string>

#include <neuron/program.hpp>

namespace model {

/// "" when every pair of instructions on different engines that touch the
/// same SBUF/PSUM bytes (one of them writing) is ordered by semaphores and
/// the streams cannot deadlock; else what is wrong. @p pairs, if given,
/// receives the number of conflicting pairs checked.
std::string unordered_conflict(const neuron::Program &p, size_t *pairs = nullptr);

} // namespace model
