// Small simdjson (DOM) helpers for structural JSON checks in tests.
#pragma once

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace itest {

// A parsed JSON document that owns its text and parser (cheap to copy).
class Json {
 public:
  Json() = default;
  explicit Json(std::string_view text);

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  const std::string& text() const { return text_; }
  simdjson::dom::element root() const { return root_; }

  // Object-key path lookup from the root; nullopt if any step is missing.
  std::optional<simdjson::dom::element> Get(std::initializer_list<std::string_view> path) const;
  std::optional<std::string> GetString(std::initializer_list<std::string_view> path) const;
  std::optional<int64_t> GetInt(std::initializer_list<std::string_view> path) const;
  bool Has(std::initializer_list<std::string_view> path) const { return Get(path).has_value(); }

 private:
  std::string text_;
  std::shared_ptr<simdjson::dom::parser> parser_;
  simdjson::dom::element root_;
  bool ok_ = false;
  std::string error_ = "not parsed";
};

std::optional<simdjson::dom::element> Child(simdjson::dom::element e, std::string_view key);
std::string Dump(simdjson::dom::element e);

// Structural equality: objects compare as unordered key sets; integers compare by
// value whether signed or unsigned; a string never equals a number.
bool JsonEqual(simdjson::dom::element a, simdjson::dom::element b);

// `actual` equals the JSON text `expected` structurally.
::testing::AssertionResult JsonMatches(simdjson::dom::element actual, std::string_view expected);
::testing::AssertionResult JsonMatches(const std::optional<simdjson::dom::element>& actual,
                                       std::string_view expected);

}  // namespace itest
