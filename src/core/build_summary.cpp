#include "core/build_info.h"

namespace edgeprobe {

std::string build_summary(const BuildInfo& info) {
  std::string out = info.git_commit + (info.git_dirty ? "-dirty" : "");
  out += ", " + (info.build_type.empty() ? std::string("no build type") : info.build_type);
  return out + ", " + info.compiler;
}

}  // namespace edgeprobe
