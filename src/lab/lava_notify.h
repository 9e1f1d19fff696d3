#pragma once
// LAVA's notify callback, received: `lab receive RUN --listen HOST:PORT` waits for the
// POSTs LAVA sends when a job of the lab run finishes (`lab submit --notify-url`) and
// imports the lab run at each, until every job has ended. A callback only prompts an
// import, which reads LAVA's API with edgeprobe's own token: a forged one costs a fetch,
// nothing else, so the callback's body is not trusted for anything.
#include <functional>
#include <string>

#include "core/stop_token.h"
#include "lab/lava_lab.h"

namespace edgeprobe::lab::lava {

struct ReceiveOptions {
  std::string listen = "127.0.0.1:0";
  double timeout_s = 24 * 3600;  // give up (exit 3) when jobs have not all ended by then
  double poll_s = 600;           // import this often anyway: a callback LAVA could not deliver
  std::function<void(const std::string&)> say;
  std::function<void(int port)> listening;  // the port bound (port 0 picks a free one)
  StopToken stop = StopToken::process();
};

LabJobs receive(store::Store& store, store::RunId lab_run, const ReceiveOptions& options);

}  // namespace edgeprobe::lab::lava
