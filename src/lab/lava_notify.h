#pragma once
// LAVA's notify callback, received: `lab receive RUN --listen HOST:PORT` waits for the
// POSTs LAVA sends when a job of the lab run finishes (`lab submit --notify-url`) and
// imports the lab run at each, until every job has ended. A callback only prompts an
// import, which reads LAVA's API with edgeprobe's own token: a forged one costs a few
// fetches (ReceiveOptions::settle_s), nothing else, so its body is not trusted for anything.
#include <functional>
#include <string>

#include "core/stop_token.h"
#include "lab/lava_lab.h"

namespace edgeprobe::lab::lava {

struct ReceiveOptions {
  std::string listen = "127.0.0.1:0";
  double timeout_s = 24 * 3600;  // give up (exit 3) when jobs have not all ended by then
  double poll_s = 600;           // import this often anyway: a callback LAVA could not deliver
  // LAVA sends a job's callback before it saves the job as finished, so the import right
  // after it can still read the job as running. After a callback that ends no job, the
  // lab run is read again with a backoff (0.25 s, 0.5 s, 1 s, ... at most 30 s apart)
  // until a job ends or settle_s has passed since the callback.
  double settle_s = 120;
  std::function<void(const std::string&)> say;
  std::function<void(int port)> listening;  // the port bound (port 0 picks a free one)
  StopToken stop = StopToken::process();
};

LabJobs receive(store::Store& store, store::RunId lab_run, const ReceiveOptions& options);

}  // namespace edgeprobe::lab::lava
