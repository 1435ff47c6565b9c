// Small text helpers for error messages (private to the core).
#pragma once

#include <array>
#include <cstdint>
#include <sstream>
#include <string>

namespace hybridfd::detail {

template <class T, std::size_t N>
std::string tuple_text(const std::array<T, N>& values, std::size_t count = N) {
  std::ostringstream text;
  text << '(';
  for (std::size_t i = 0; i < count; ++i) text << (i ? ", " : "") << values[i];
  if (count == 1) text << ',';
  text << ')';
  return text.str();
}

template <class... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream text;
  (text << ... << parts);
  return text.str();
}

}  // namespace hybridfd::detail
