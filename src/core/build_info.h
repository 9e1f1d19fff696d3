#pragma once
#include <string>

namespace edgeprobe {

// Which build of edgeprobe this is, so two builds of one version tell apart: computed at
// build time into one generated file (cmake/build_info.cmake), not into a header every
// file includes, so a commit recompiles that file alone.
struct BuildInfo {
  std::string git_commit;  // 12 hex digits, or "unknown" outside a git checkout
  bool git_dirty = false;  // tracked files differed from the commit when it was built
  std::string build_type;  // CMAKE_BUILD_TYPE: Release, Debug, RelWithDebInfo ("" when unset)
  std::string compiler;    // "GNU 12.2.0", "Clang 16.0.6"
};
const BuildInfo& build_info();

// "e1f2397abcde-dirty, Release, GNU 12.2.0": the commit (with -dirty) and how it was built.
std::string build_summary(const BuildInfo& info = build_info());

}  // namespace edgeprobe
