// The docs are a map of the code, so they must stay short and point at code that exists: the
// README (an entry point) and docs/architecture.md (the map of who decides what) have a size
// budget, and every `Type::member` a Markdown file names must still be declared in the C++
// sources. A doc that outgrows its budget, or a rename that leaves a doc behind, fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace ker {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = KER_SOURCE_DIR;

// Bytes each doc may hold: past that it stops being an entry point or a map.
const std::map<std::string, std::uintmax_t> kBudgets = {
    {"README.md", 12000},
    {"docs/architecture.md", 15000},
};

// The folders holding the C++ sources the docs may name.
const std::vector<std::string> kSourceFolders = {
    "common", "model", "scheduler", "controller", "agent", "nri", "tools", "bench", "test", "fuzz"};

// Namespaces that are not the project's: names under them are not checked.
const std::set<std::string> kForeignNamespaces = {"std", "nlohmann", "spdlog", "httplib",
                                                  "testing"};

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  return lines;
}

bool isWordChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// Hidden folders (.cache/, .git/), build trees and copies of other projects' code.
bool skippedFolder(const fs::path& dir) {
  const std::string name = dir.filename().string();
  return name.empty() || name[0] == '.' || name.rfind("build", 0) == 0 || name == "third_party" ||
         name == "third-party" || name == "vendor";
}

// README.md, docs/*.md, and the README.md of every folder below the root, sorted.
std::vector<fs::path> markdownFiles() {
  std::vector<fs::path> files = {kRoot / "README.md"};
  for (const auto& entry : fs::directory_iterator(kRoot / "docs")) {
    if (entry.path().extension() == ".md") {
      files.push_back(entry.path());
    }
  }
  for (const auto& top : fs::directory_iterator(kRoot)) {
    if (!top.is_directory() || skippedFolder(top.path()) || top.path().filename() == "docs") {
      continue;
    }
    for (auto it = fs::recursive_directory_iterator(top.path());
         it != fs::recursive_directory_iterator(); ++it) {
      if (it->is_directory() && skippedFolder(it->path())) {
        it.disable_recursion_pending();
      } else if (it->path().filename() == "README.md") {
        files.push_back(it->path());
      }
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// What the C++ sources declare, enough to tell whether `Type::member` names something real.
class SourceIndex {
 public:
  SourceIndex() {
    // `class X {`, `enum class X : int`, `struct Outer::X`, `namespace ker::X`: 1 is the name,
    // 2 what follows it.
    const std::regex declaration(
        R"re(\b(?:class|struct|union|enum|namespace)\s+(?:(?:class|struct)\s+)?)re"
        R"re(((?:[A-Za-z_]\w*::)*[A-Za-z_]\w*)\s*([^\s;]|$))re");
    for (const auto& folder : kSourceFolders) {
      for (const auto& entry : fs::recursive_directory_iterator(kRoot / folder)) {
        const std::string ext = entry.path().extension().string();
        if ((ext != ".h" && ext != ".cpp") || entry.path().filename() == "docs_test.cpp") {
          continue;
        }
        ++files_;
        const std::string text = readFile(entry.path());
        const size_t file = identifiers_.size();
        identifiers_.emplace_back();
        for (const auto& line : splitLines(text)) {
          for (auto m = std::sregex_iterator(line.begin(), line.end(), declaration);
               m != std::sregex_iterator(); ++m) {
            // `class X;` only says that X exists elsewhere.
            if ((*m)[2] == ";") {
              continue;
            }
            for (const auto& part : splitQualified((*m)[1])) {
              declaredIn_[part].insert(file);
            }
          }
        }
        indexWords(text, file);
      }
    }
  }

  size_t files() const { return files_; }
  bool declares(const std::string& type) const { return declaredIn_.count(type) != 0; }

  // True when `type::member` is written somewhere, or member is an identifier of a file that
  // declares type.
  bool hasMember(const std::string& type, const std::string& member) const {
    if (qualified_.count(type + "::" + member) != 0) {
      return true;
    }
    const auto declared = declaredIn_.find(type);
    if (declared == declaredIn_.end()) {
      return false;
    }
    for (size_t file : declared->second) {
      if (identifiers_[file].count(member) != 0) {
        return true;
      }
    }
    return false;
  }

  static std::vector<std::string> splitQualified(const std::string& name) {
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t sep; (sep = name.find("::", start)) != std::string::npos; start = sep + 2) {
      parts.push_back(name.substr(start, sep - start));
    }
    parts.push_back(name.substr(start));
    return parts;
  }

 private:
  // Every identifier of the file, and every `a::b` pair written in it.
  void indexWords(const std::string& text, size_t file) {
    std::string previous;
    for (size_t i = 0; i < text.size();) {
      if (!isWordChar(text[i])) {
        ++i;
        continue;
      }
      size_t end = i;
      while (end < text.size() && isWordChar(text[end])) {
        ++end;
      }
      const std::string word = text.substr(i, end - i);
      identifiers_[file].insert(word);
      if (!previous.empty() && i >= 2 && text.compare(i - 2, 2, "::") == 0) {
        qualified_.insert(previous + "::" + word);
      }
      previous = word;
      i = end;
    }
  }

  size_t files_ = 0;
  std::map<std::string, std::set<size_t>> declaredIn_;
  std::vector<std::set<std::string>> identifiers_;
  std::set<std::string> qualified_;
};

// A qualified name a doc writes in backticks (or in a fenced block), and where.
struct DocName {
  std::string name;
  int line = 0;
};

// The qualified names of one Markdown file: inside `code spans`, which may wrap a line but not
// a paragraph, and anywhere in a fenced block.
std::vector<DocName> qualifiedNames(const std::string& markdown) {
  const std::regex qualified(R"re((?:^|[^\w:])((?:[A-Za-z_]\w*::)+~?[A-Za-z_]\w*))re");
  const std::regex span(R"re(`([^`\n]+(?:\n[^`\n]+)*)`)re");
  std::vector<DocName> names;
  auto collect = [&](const std::string& text, int firstLine) {
    for (auto m = std::sregex_iterator(text.begin(), text.end(), qualified);
         m != std::sregex_iterator(); ++m) {
      const auto at = text.begin() + m->position(1);
      const int line = firstLine + static_cast<int>(std::count(text.begin(), at, '\n'));
      names.push_back({(*m)[1], line});
    }
  };
  // The prose, with fenced lines blanked so that line numbers stay.
  std::string prose;
  bool fenced = false;
  int lineNumber = 0;
  for (const auto& line : splitLines(markdown)) {
    ++lineNumber;
    const size_t first = line.find_first_not_of(' ');
    const bool fence = first != std::string::npos && line.compare(first, 3, "```") == 0;
    if (fence) {
      fenced = !fenced;
    } else if (fenced) {
      collect(line, lineNumber);
    }
    prose += (fence || fenced ? "" : line) + "\n";
  }
  for (auto m = std::sregex_iterator(prose.begin(), prose.end(), span); m != std::sregex_iterator();
       ++m) {
    const auto at = prose.begin() + m->position(1);
    collect((*m)[1], 1 + static_cast<int>(std::count(prose.begin(), at, '\n')));
  }
  return names;
}

TEST(Docs, TheEntryPointAndTheMapStayWithinTheirBudgets) {
  for (const auto& [file, budget] : kBudgets) {
    const std::uintmax_t size = fs::file_size(kRoot / file);
    EXPECT_LE(size, budget) << file << " is " << size << " bytes, over its budget of " << budget
                            << ": move reference detail to a page it links to";
  }
}

TEST(Docs, EveryQualifiedNameADocWritesExistsInTheSources) {
  const SourceIndex sources;
  ASSERT_GT(sources.files(), 100u);
  size_t checked = 0;
  for (const auto& path : markdownFiles()) {
    const std::string doc = fs::relative(path, kRoot).string();
    for (const auto& [name, line] : qualifiedNames(readFile(path))) {
      const auto parts = SourceIndex::splitQualified(name);
      if (kForeignNamespaces.count(parts[0]) != 0) {
        continue;
      }
      ++checked;
      for (size_t i = 0; i + 1 < parts.size(); ++i) {
        const std::string& type = parts[i];
        const std::string member = parts[i + 1][0] == '~' ? parts[i + 1].substr(1) : parts[i + 1];
        if (!sources.declares(type)) {
          ADD_FAILURE() << doc << ":" << line << ": `" << name << "`: no class, struct, enum or "
                        << "namespace " << type << " is declared in the sources";
          break;
        }
        if (!sources.hasMember(type, member)) {
          ADD_FAILURE() << doc << ":" << line << ": `" << name << "`: " << type << " has no "
                        << member << " in the sources";
          break;
        }
      }
    }
  }
  // A scan that finds nothing would pass whatever the docs say.
  EXPECT_GT(checked, 20u);
}

}  // namespace
}  // namespace ker
