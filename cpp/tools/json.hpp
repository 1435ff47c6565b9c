// A JSON value and its text, enough for hybridfd-bench's result record (the shape of
// src/hybridfd/schemas/result.schema.json). Numbers print with 17 significant digits so
// a double reads back exactly (the checksum is compared bit for bit by the tests).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace hybridfd::tools {

struct Json {
  using Array = std::vector<Json>;
  using Object = std::vector<std::pair<std::string, Json>>;  // keys in insertion order
  std::variant<std::nullptr_t, bool, std::int64_t, double, std::string, Array, Object> value;

  Json() : value(nullptr) {}
  Json(std::nullptr_t) : value(nullptr) {}
  Json(bool b) : value(b) {}
  Json(int i) : value(std::int64_t{i}) {}
  Json(std::int64_t i) : value(i) {}
  Json(double d) : value(d) {}
  Json(const char* s) : value(std::string(s)) {}
  Json(std::string s) : value(std::move(s)) {}
  Json(Array a) : value(std::move(a)) {}
  Json(Object o) : value(std::move(o)) {}

  // Compact text; a non-finite double becomes null (JSON has no NaN).
  std::string dump() const;
};

}  // namespace hybridfd::tools
