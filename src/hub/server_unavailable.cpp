// `serve` in a build without cpp-httplib (EDGEPROBE_HUB=OFF, the default for a
// cross-built device bundle): one clear line instead of a missing command.
#include "core/error.h"
#include "hub/server.h"

namespace edgeprobe::hub {

void serve(const HubOptions&, const std::function<bool()>&, const std::function<void(const std::string&)>&) {
  throw_environment(
      "this edgeprobe was built without the results hub's server (EDGEPROBE_HUB=OFF): "
      "run 'edgeprobe serve' from a build on a host with libcpp-httplib-dev");
}

}  // namespace edgeprobe::hub
