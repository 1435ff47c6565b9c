#include "json.hpp"

#include <cmath>
#include <cstdio>

namespace hybridfd::tools {
namespace {

void write_string(const std::string& text, std::string& out) {
  out += '"';
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

struct Writer {
  std::string& out;
  void operator()(std::nullptr_t) const { out += "null"; }
  void operator()(bool b) const { out += b ? "true" : "false"; }
  void operator()(std::int64_t i) const { out += std::to_string(i); }
  void operator()(double d) const {
    if (!std::isfinite(d)) {
      out += "null";
      return;
    }
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", d);
    out += text;
  }
  void operator()(const std::string& s) const { write_string(s, out); }
  void operator()(const Json::Array& array) const {
    out += '[';
    for (std::size_t i = 0; i < array.size(); ++i) {
      if (i) out += ", ";
      std::visit(*this, array[i].value);
    }
    out += ']';
  }
  void operator()(const Json::Object& object) const {
    out += '{';
    for (std::size_t i = 0; i < object.size(); ++i) {
      if (i) out += ", ";
      write_string(object[i].first, out);
      out += ": ";
      std::visit(*this, object[i].second.value);
    }
    out += '}';
  }
};

}  // namespace

std::string Json::dump() const {
  std::string out;
  std::visit(Writer{out}, value);
  return out;
}

}  // namespace hybridfd::tools
