#include "bench/prom_text.h"

#include <cstdlib>
#include <optional>

namespace ker::bench {

namespace {

// Parses `{a="x",b="y"}` starting at text[pos] == '{'; returns the position after '}'.
std::optional<size_t> parseLabels(std::string_view line, size_t pos,
                                  std::map<std::string, std::string>& labels) {
  ++pos;  // '{'
  while (pos < line.size()) {
    while (pos < line.size() && (line[pos] == ' ' || line[pos] == ',')) {
      ++pos;
    }
    if (pos < line.size() && line[pos] == '}') {
      return pos + 1;
    }
    const size_t eq = line.find('=', pos);
    if (eq == std::string_view::npos || eq + 1 >= line.size() || line[eq + 1] != '"') {
      return std::nullopt;
    }
    std::string key(line.substr(pos, eq - pos));
    std::string value;
    size_t i = eq + 2;
    for (; i < line.size() && line[i] != '"'; ++i) {
      if (line[i] == '\\' && i + 1 < line.size()) {
        ++i;
        value += line[i] == 'n' ? '\n' : line[i];
      } else {
        value += line[i];
      }
    }
    if (i >= line.size()) {
      return std::nullopt;
    }
    labels[std::move(key)] = std::move(value);
    pos = i + 1;
  }
  return std::nullopt;
}

std::string keyOf(const Sample& s, const std::vector<std::string>& keyLabels) {
  std::string key;
  for (size_t i = 0; i < keyLabels.size(); ++i) {
    auto it = s.labels.find(keyLabels[i]);
    if (i > 0) {
      key += ' ';
    }
    if (it != s.labels.end()) {
      key += it->second;
    }
  }
  return key;
}

std::string seriesId(const Sample& s) {
  std::string id;
  for (const auto& [k, v] : s.labels) {
    id += k + '\x01' + v + '\x02';
  }
  return id;
}

}  // namespace

std::vector<Sample> samplesOf(std::string_view text, std::string_view name) {
  std::vector<Sample> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (line.size() <= name.size() || line.substr(0, name.size()) != name) {
      continue;
    }
    size_t pos = name.size();
    Sample s;
    if (line[pos] == '{') {
      auto after = parseLabels(line, pos, s.labels);
      if (!after) {
        continue;
      }
      pos = *after;
    }
    if (pos >= line.size() || line[pos] != ' ') {
      continue;  // a longer name sharing this prefix
    }
    const std::string rest(line.substr(pos + 1));
    char* parsedEnd = nullptr;
    s.value = std::strtod(rest.c_str(), &parsedEnd);
    if (parsedEnd == rest.c_str()) {
      continue;
    }
    out.push_back(std::move(s));
  }
  return out;
}

double sumOf(std::string_view text, std::string_view name,
             const std::map<std::string, std::string>& match) {
  double sum = 0;
  for (const auto& s : samplesOf(text, name)) {
    bool ok = true;
    for (const auto& [k, v] : match) {
      auto it = s.labels.find(k);
      if (it == s.labels.end() || it->second != v) {
        ok = false;
        break;
      }
    }
    if (ok) {
      sum += s.value;
    }
  }
  return sum;
}

std::map<std::string, double> counterGrowth(std::string_view before, std::string_view after,
                                            std::string_view name,
                                            const std::vector<std::string>& keyLabels) {
  std::map<std::string, double> was;
  for (const auto& s : samplesOf(before, name)) {
    was[seriesId(s)] = s.value;
  }
  std::map<std::string, double> growth;
  for (const auto& s : samplesOf(after, name)) {
    auto it = was.find(seriesId(s));
    const double d = s.value - (it == was.end() ? 0 : it->second);
    if (d > 0) {
      growth[keyOf(s, keyLabels)] += d;
    }
  }
  return growth;
}

}  // namespace ker::bench
