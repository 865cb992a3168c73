// The CRDs document their API: every property of every schema in crds/ has a description, so
// `kubectl explain` explains each field.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace ker {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> crdFiles() {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(fs::path(KER_SOURCE_DIR) / "crds")) {
    if (entry.path().extension() == ".yaml") {
      out.push_back(entry.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool described(const YAML::Node& schema) {
  const YAML::Node d = schema["description"];
  return d && d.IsScalar() && !d.as<std::string>().empty();
}

// Appends to `missing` the path of every property below `schema` that lacks a description.
void collectUndescribed(const YAML::Node& schema, const std::string& path,
                        std::vector<std::string>& missing) {
  if (!schema || !schema.IsMap()) {
    return;
  }
  if (const YAML::Node props = schema["properties"]; props && props.IsMap()) {
    for (const auto& kv : props) {
      const std::string child = path + "." + kv.first.as<std::string>();
      // The API server forbids anything but the type on the root's metadata (ObjectMeta,
      // which kubectl explain documents itself).
      if (child == ".metadata") {
        continue;
      }
      if (!described(kv.second)) {
        missing.push_back(child);
      }
      collectUndescribed(kv.second, child, missing);
    }
  }
  collectUndescribed(schema["items"], path + "[]", missing);
  collectUndescribed(schema["additionalProperties"], path + "{}", missing);
}

TEST(CrdSchema, EveryPropertyHasADescription) {
  const auto files = crdFiles();
  ASSERT_GE(files.size(), 2u);
  for (const auto& file : files) {
    SCOPED_TRACE(file.string());
    for (const YAML::Node& doc : YAML::LoadAllFromFile(file.string())) {
      ASSERT_EQ(doc["kind"].as<std::string>(), "CustomResourceDefinition");
      const YAML::Node versions = doc["spec"]["versions"];
      ASSERT_TRUE(versions && versions.IsSequence());
      for (const auto& version : versions) {
        const YAML::Node schema = version["schema"]["openAPIV3Schema"];
        ASSERT_TRUE(schema) << "no schema in version " << version["name"].as<std::string>();
        EXPECT_TRUE(described(schema)) << "the schema's root has no description";
        std::vector<std::string> missing;
        collectUndescribed(schema, "", missing);
        for (const auto& path : missing) {
          ADD_FAILURE() << version["name"].as<std::string>() << ": " << path
                        << " has no description";
        }
      }
    }
  }
}

}  // namespace
}  // namespace ker
