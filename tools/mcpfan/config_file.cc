#include "config_file.h"

#include <algorithm>
#include <cstdint>
#include <istream>
#include <string_view>
#include <vector>

namespace mcpfan::tool {

namespace {

// One `key = value` of the file.
struct Item {
  enum class Kind { String, Bool, Number, Array };
  std::string key;
  std::vector<std::string> values;  // an array's elements; else one
  std::string text;                 // the value as written, for messages
  Kind kind = Kind::String;
  int line = 0;
};

// A problem in the file: its message already names the file, the line and the key.
class FileProblem : public CLI::ConfigError {
 public:
  explicit FileProblem(std::string msg) : CLI::ConfigError(std::move(msg), CLI::ExitCodes::ConfigError) {}
};

bool is_key_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// A TOML number as CLI11 reads numbers: underscores between digits dropped, 0x/0o/0b made
// decimal. Empty when `t` is not a TOML integer or float.
std::string toml_number(std::string_view t) {
  std::string_view body = t;
  std::string sign;
  if (!body.empty() && (body.front() == '+' || body.front() == '-')) {
    if (body.front() == '-') sign = "-";
    body.remove_prefix(1);
  }
  if (body.size() > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'o' || body[1] == 'b') && sign.empty()) {
    int base = body[1] == 'x' ? 16 : body[1] == 'o' ? 8 : 2;
    std::uint64_t v = 0;
    for (char c : body.substr(2)) {
      if (c == '_') continue;
      int d = is_digit(c)              ? c - '0'
              : (c >= 'a' && c <= 'f') ? c - 'a' + 10
              : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                       : 99;
      if (d >= base || v > (UINT64_MAX - static_cast<unsigned>(d)) / static_cast<unsigned>(base)) return {};
      v = v * static_cast<unsigned>(base) + static_cast<unsigned>(d);
    }
    return std::to_string(v);
  }
  // [digits][.digits][e[+-]digits], an underscore only between two digits.
  std::string out = sign;
  bool digits = false, dot = false, exp = false;
  for (std::size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (is_digit(c)) {
      digits = true;
      out += c;
    } else if (c == '_' && i > 0 && i + 1 < body.size() && is_digit(body[i - 1]) && is_digit(body[i + 1])) {
      continue;
    } else if (c == '.' && !dot && !exp && digits && i + 1 < body.size() && is_digit(body[i + 1])) {
      dot = true;
      out += c;
    } else if ((c == 'e' || c == 'E') && !exp && digits) {
      exp = true;
      out += c;
      if (i + 1 < body.size() && (body[i + 1] == '+' || body[i + 1] == '-')) out += body[++i];
      if (i + 1 >= body.size()) return {};
    } else {
      return {};
    }
  }
  return digits ? out : std::string();
}

// The subset of TOML a flag file needs: `key = value` lines, comments, basic and literal
// strings, integers, floats, booleans, and arrays of those (which may span lines).
class Reader {
 public:
  Reader(std::istream& in, std::string file) : file_(std::move(file)) {
    std::string l;
    while (std::getline(in, l)) {
      if (!l.empty() && l.back() == '\r') l.pop_back();
      lines_.push_back(std::move(l));
    }
    // Some editors start a UTF-8 file with a byte order mark; TOML allows it.
    if (!lines_.empty() && lines_.front().rfind("\xEF\xBB\xBF", 0) == 0) lines_.front().erase(0, 3);
  }

  std::vector<Item> read() {
    std::vector<Item> items;
    for (row_ = 0; row_ < lines_.size(); ++row_) {
      pos_ = 0;
      skip_blank();
      if (at_end_of_line()) continue;
      items.push_back(entry());
    }
    return items;
  }

 private:
  const std::string& line() const { return lines_[row_]; }
  char peek() const { return pos_ < line().size() ? line()[pos_] : '\0'; }
  bool at_end_of_line() const { return pos_ >= line().size() || line()[pos_] == '#'; }
  void skip_blank() {
    while (pos_ < line().size() && (line()[pos_] == ' ' || line()[pos_] == '\t')) ++pos_;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw FileProblem(file_ + ":" + std::to_string(row_ + 1) + ": " + what);
  }

  Item entry() {
    if (peek() == '[') {
      std::size_t close = line().find(']', pos_);
      std::string name = line().substr(pos_, close == std::string::npos ? std::string::npos : close - pos_ + 1);
      fail(name + ": tables are not used; every key is top-level (the long flag names of mcpfan --help)");
    }
    std::size_t start = pos_;
    while (pos_ < line().size() && is_key_char(line()[pos_])) ++pos_;
    Item item;
    item.key = line().substr(start, pos_ - start);
    item.line = static_cast<int>(row_ + 1);
    if (item.key.empty()) {
      if (peek() == '"' || peek() == '\'')
        fail("quoted keys are not used: write the flag name bare (listen = \"...\")");
      fail("expected KEY = VALUE, found \"" + line().substr(start) + "\"");
    }
    skip_blank();
    if (peek() != '=') fail(item.key + ": expected \"=\" after the key");
    ++pos_;
    skip_blank();
    if (at_end_of_line()) fail(item.key + ": no value after \"=\"");
    std::size_t value_row = row_, value_pos = pos_;
    value(item, /*in_array=*/false);
    item.text = row_ == value_row ? line().substr(value_pos, pos_ - value_pos) : "[...]";
    skip_blank();
    if (!at_end_of_line()) fail(item.key + ": unexpected \"" + line().substr(pos_) + "\" after the value");
    return item;
  }

  void value(Item& item, bool in_array) {
    char c = peek();
    if (c == '"' || c == '\'') {
      item.values.push_back(c == '"' ? basic_string(item.key) : literal_string(item.key));
      if (!in_array) item.kind = Item::Kind::String;
    } else if (c == '[') {
      if (in_array) fail(item.key + ": nested arrays are not used");
      array(item);
    } else if (c == '{') {
      fail(item.key + ": inline tables are not used");
    } else {
      std::size_t start = pos_;
      while (pos_ < line().size() && line()[pos_] != ' ' && line()[pos_] != '\t' && line()[pos_] != ',' &&
             line()[pos_] != ']' && line()[pos_] != '#') {
        ++pos_;
      }
      std::string token = line().substr(start, pos_ - start);
      Item::Kind kind = Item::Kind::Number;
      std::string v;
      if (token == "true" || token == "false") {
        kind = Item::Kind::Bool;
        v = token;
      } else {
        v = toml_number(token);
        if (v.empty()) fail(item.key + " = " + token + ": not a TOML value (a string needs quotes: \"" + token + "\")");
      }
      item.values.push_back(v);
      if (!in_array) item.kind = kind;
    }
  }

  void array(Item& item) {
    item.kind = Item::Kind::Array;
    const std::size_t open_row = row_;
    ++pos_;  // '['
    auto next_token = [&] {  // across line ends and comments
      for (;;) {
        skip_blank();
        if (!at_end_of_line()) return;
        if (row_ + 1 >= lines_.size()) {
          row_ = open_row;
          fail(item.key + ": unterminated array (no \"]\")");
        }
        ++row_;
        pos_ = 0;
      }
    };
    for (;;) {
      next_token();
      if (peek() == ']') break;
      value(item, /*in_array=*/true);
      next_token();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != ']') fail(item.key + ": expected \",\" or \"]\" in the array");
      break;
    }
    ++pos_;  // ']'
  }

  std::string basic_string(const std::string& key) {
    if (line().compare(pos_, 3, "\"\"\"") == 0)
      fail(key + ": multi-line strings (\"\"\") are not used; write the value on one line");
    ++pos_;
    std::string out;
    for (;;) {
      if (pos_ >= line().size()) fail(key + ": unterminated string (no closing \" on this line)");
      char c = line()[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t') fail(key + ": a control character in a string");
        out += c;
        continue;
      }
      char e = pos_ < line().size() ? line()[pos_++] : '\0';
      switch (e) {
        case 'b': out += '\b'; break;
        case 't': out += '\t'; break;
        case 'n': out += '\n'; break;
        case 'f': out += '\f'; break;
        case 'r': out += '\r'; break;
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case 'u':
        case 'U': {
          std::size_t n = e == 'u' ? 4 : 8;
          if (pos_ + n > line().size()) fail(key + ": \\" + e + " needs " + std::to_string(n) + " hex digits");
          std::uint32_t cp = 0;
          for (std::size_t i = 0; i < n; ++i) {
            char h = line()[pos_++];
            int d = is_digit(h)              ? h - '0'
                    : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                    : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                             : -1;
            if (d < 0) fail(key + ": \\" + e + " needs " + std::to_string(n) + " hex digits");
            cp = cp * 16 + static_cast<std::uint32_t>(d);
          }
          if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            fail(key + ": \\" + e + " names no Unicode scalar value");
          append_utf8(out, cp);
          break;
        }
        default:
          fail(key + ": unknown escape \\" + std::string(1, e) + " in a string (a Windows path? use 'single quotes')");
      }
    }
  }

  std::string literal_string(const std::string& key) {
    if (line().compare(pos_, 3, "'''") == 0)
      fail(key + ": multi-line strings (''') are not used; write the value on one line");
    std::size_t close = line().find('\'', pos_ + 1);
    if (close == std::string::npos) fail(key + ": unterminated string (no closing ' on this line)");
    std::string out = line().substr(pos_ + 1, close - pos_ - 1);
    pos_ = close + 1;
    return out;
  }

  std::string file_;
  std::vector<std::string> lines_;
  std::size_t row_ = 0;
  std::size_t pos_ = 0;
};

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// " (did you mean workers?)" for a key one or two edits from a setting.
std::string suggestion(const std::string& key, const CLI::App& app) {
  std::string best;
  std::size_t best_d = 3;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& name : o->get_lnames()) {
      if (is_command_only(name)) continue;
      std::size_t d = edit_distance(key, name);
      if (d < best_d) {
        best_d = d;
        best = name;
      }
    }
  }
  return best.empty() ? std::string() : " (did you mean " + best + "?)";
}

// "not a valid ..." for CLI11's conversion failure, in the words of the option's type.
std::string expected(const CLI::Option& o) {
  std::string t = o.get_type_name();
  if (t.rfind("UINT", 0) == 0) return "expected a whole number of at least 0";
  if (t.rfind("INT", 0) == 0) return "expected a whole number";
  if (t.rfind("FLOAT", 0) == 0 || t.rfind("NUMBER", 0) == 0) return "expected a number";
  return "expected " + t;
}

class TomlConfig : public CLI::ConfigBase {
 public:
  TomlConfig(const CLI::App* app, ScratchApp scratch, std::shared_ptr<ConfigSource> source)
      : app_(app), scratch_(std::move(scratch)), source_(std::move(source)) {}

  std::vector<CLI::ConfigItem> from_config(std::istream& in) const override {
    ConfigSource& src = *source_;
    const CLI::Option* config = app_->get_config_ptr();
    src.file = config != nullptr && !config->results().empty() ? config->results().front() : "config file";
    src.lines.clear();
    src.overridden.clear();
    std::vector<Item> items = Reader(in, src.file).read();
    std::unique_ptr<CLI::App> trial_app = scratch_();
    std::vector<CLI::ConfigItem> out;
    for (const Item& item : items) {
      const std::string where = src.file + ":" + std::to_string(item.line) + ": " + item.key;
      if (is_command_only(item.key)) throw FileProblem(where + ": not a setting (only a command-line option)");
      if (auto seen = src.lines.find(item.key); seen != src.lines.end()) {
        throw FileProblem(where + ": duplicate key (also on line " + std::to_string(seen->second) + ")");
      }
      const CLI::Option* op = app_->get_option_no_throw("--" + item.key);
      CLI::Option* trial = trial_app->get_option_no_throw("--" + item.key);
      if (op == nullptr || trial == nullptr) {
        throw FileProblem(where + ": unknown key" + suggestion(item.key, *trial_app) +
                          "; keys are the long flag names of mcpfan --help without the dashes");
      }
      src.lines[item.key] = item.line;
      if (op->count() > 0) src.overridden.insert(item.key);
      try_value(*trial, item, where);
      CLI::ConfigItem ci;
      ci.name = item.key;
      ci.inputs = item.values;
      out.push_back(std::move(ci));
    }
    return out;
  }

 private:
  // As CLI11 applies a config item (App::_parse_single_config), on the scratch app's option:
  // the conversion and the option's checks run, and a failure gets this item's line.
  static void try_value(CLI::Option& trial, const Item& item, const std::string& where) {
    const std::string what = where + " = " + item.text + ": ";
    try {
      if (trial.get_expected_min() == 0) {
        if (item.kind != Item::Kind::Bool) throw FileProblem(what + "expected true or false");
        trial.add_result(trial.get_flag_value(item.key, item.values.front()));
      } else {
        if (item.kind == Item::Kind::Bool) throw FileProblem(what + expected(trial) + ", not a boolean");
        trial.add_result(item.values);
      }
      trial.run_callback();
    } catch (const FileProblem&) {
      throw;
    } catch (const CLI::ConversionError&) {
      throw FileProblem(what + expected(trial));
    } catch (const CLI::Error& e) {
      std::string msg = printable(e.what());
      const std::string own = "--" + item.key + ": ";
      if (msg.rfind(own, 0) == 0) msg.erase(0, own.size());
      throw FileProblem(what + msg);
    }
  }

  const CLI::App* app_;
  ScratchApp scratch_;
  std::shared_ptr<ConfigSource> source_;
};

}  // namespace

std::string printable(std::string s) {
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 && c != '\n') c = '?';
  }
  return s;
}

bool is_command_only(const std::string& key) {
  return key == "help" || key == "config" || key == "version" || key == "check-config";
}

std::string ConfigSource::locate(const std::string& message) const {
  std::size_t best = std::string::npos;
  const std::string* best_key = nullptr;
  for (const auto& [key, line] : lines) {
    if (overridden.count(key)) continue;
    const std::string flag = "--" + key;
    for (std::size_t at = message.find(flag); at != std::string::npos; at = message.find(flag, at + 1)) {
      std::size_t end = at + flag.size();
      bool whole = end >= message.size() || !(is_key_char(message[end]) && message[end] != '.');
      if (whole) {
        if (at < best) {
          best = at;
          best_key = &key;
        }
        break;
      }
    }
  }
  if (best_key == nullptr) return {};
  return file + ":" + std::to_string(lines.at(*best_key)) + ": " + *best_key + ": ";
}

std::shared_ptr<const ConfigSource> use_config_file(CLI::App& app, ScratchApp scratch) {
  auto source = std::make_shared<ConfigSource>();
  app.allow_config_extras(CLI::config_extras_mode::error);  // a misspelt key is an error, not a silent default
  app.set_config("--config", "", "TOML config file; keys are the long flag names (listen = \"127.0.0.1:8080\"); "
                                 "the command line wins over the file");
  app.config_formatter(std::make_shared<TomlConfig>(&app, std::move(scratch), source));
  return source;
}

}  // namespace mcpfan::tool
