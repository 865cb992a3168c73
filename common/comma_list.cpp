#include "common/comma_list.h"

namespace ker {

std::vector<std::string> splitCommaList(std::string_view list) {
  constexpr std::string_view kSpace = " \t\r\n";
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string_view::npos) {
      end = list.size();
    }
    std::string_view item = list.substr(start, end - start);
    const size_t first = item.find_first_not_of(kSpace);
    if (first != std::string_view::npos) {
      item = item.substr(first, item.find_last_not_of(kSpace) - first + 1);
      out.emplace_back(item);
    }
    start = end + 1;
  }
  return out;
}

std::string joinCommaList(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) {
      out += ',';
    }
    out += item;
  }
  return out;
}

std::string joinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) {
    out += (out.empty() ? "" : ", ") + n;
  }
  return out;
}

}  // namespace ker
